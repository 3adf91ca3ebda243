package main

import (
	"context"
	"io"
)

// nouns are the client commands, in the order help lists them.
var nouns = []noun{topicNoun, groupNoun, produceNoun, consumeNoun, clusterNoun, userNoun, aclNoun, quotaNoun, compactionNoun}

// aliases are other names of nouns.
var aliases = map[string]string{"topics": "topic"}

// runClientCommand runs "sluice NOUN ..." when sub names a client command.
func runClientCommand(ctx context.Context, sub string, args []string, getenv func(string) string, stdout, stderr io.Writer) (int, bool) {
	name := sub
	if a, ok := aliases[sub]; ok {
		name = a
	}
	for _, n := range nouns {
		if n.name == name {
			return runNoun(ctx, n, sub, args, getenv, stdout, stderr), true
		}
	}
	return 0, false
}

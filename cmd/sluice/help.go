package main

import (
	"fmt"
	"strings"
)

// nounSummaries are the one-line descriptions "sluice help" gives the client
// commands; the verbs next to them come from the nouns themselves, so a new
// verb is listed without editing the help text.
var nounSummaries = map[string]string{
	"topic":      `topics ("topics" is an alias)`,
	"group":      "classic, consumer and share groups: lag, offset resets",
	"produce":    "produce records read from standard input",
	"consume":    "print records (kcat-style -f formats, -o, -n, -g)",
	"cluster":    "cluster id, brokers, health, the metadata quorum",
	"user":       "SCRAM users",
	"acl":        "ACLs (kafka-acls' flags)",
	"quota":      "client quotas (kafka-configs' entity flags)",
	"compaction": "why a topic has or hasn't compacted",
}

// clientCommandsHelp lists the client commands for the top-level usage, one
// per line in the layout of the other commands there.
func clientCommandsHelp() string {
	var b strings.Builder
	for _, n := range nouns {
		left := n.name
		if len(n.verbs) == 1 {
			left = strings.Join(strings.Fields(left+" "+n.verbs[0].name+" "+n.verbs[0].args), " ")
		} else {
			names := make([]string, len(n.verbs))
			for i, v := range n.verbs {
				names[i] = v.name
			}
			left += " " + strings.Join(names, "|")
		}
		summary := nounSummaries[n.name]
		if summary == "" {
			summary = n.doc
		}
		if len(left) > 35 {
			fmt.Fprintf(&b, "  %s\n  %-35s  %s\n", left, "", summary)
		} else {
			fmt.Fprintf(&b, "  %-35s  %s\n", left, summary)
		}
	}
	return b.String()
}

const versionUsage = `Usage: sluice version

Prints the version (set at build time with -ldflags "-X main.version=v1.2.3",
else the module version, else "dev" with the VCS revision when the build
recorded one), the commit, the Go version and the platform.
`

package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBinaryProduceHeadersFormat: produce -f with %h reads headers as
// consume -f %h prints them, together with -H.
func TestBinaryProduceHeadersFormat(t *testing.T) {
	bin, addr, _ := startBinary(t)
	env := []string{"SLUICE_BOOTSTRAP=" + addr}
	mustCLI(t, bin, env, []string{"topic", "create", "hd"})
	in := "k1\ttrace=abc,lang=go\tv1\nk2\t\tv2\nk3\tempty=\tv3\n"
	if out, code := runCLIInput(t, bin, env, in, "produce", "hd", "-f", `%k\t%h\t%v\n`, "-H", "src=cli", "-q"); code != 0 || out != "" {
		t.Fatalf("produce -f %%h: %d %q", code, out)
	}
	got := mustCLI(t, bin, env, []string{"consume", "hd", "-f", `%k [%h] %v\n`})
	want := "k1 [src=cli,trace=abc,lang=go] v1\nk2 [src=cli] v2\nk3 [src=cli,empty=] v3\n"
	if got != want {
		t.Errorf("consume:\n%s\nwant:\n%s", got, want)
	}
	// The output of consume -f is input for produce -f.
	if out, code := runCLIInput(t, bin, env, got, "produce", "hd", "-f", `%k [%h] %v\n`, "-q"); code != 0 {
		t.Fatalf("round trip: %d %q", code, out)
	}
	if got2 := mustCLI(t, bin, env, []string{"consume", "hd", "-o", "3", "-f", `%k [%h] %v\n`}); got2 != "k1 [src=cli,trace=abc,lang=go] v1\nk2 [src=cli] v2\nk3 [src=cli,empty=] v3\n" {
		t.Errorf("round trip read back:\n%s", got2)
	}
	if out, code := runCLIInput(t, bin, env, "k\tnoequals\tv\n", "produce", "hd", "-f", `%k\t%h\t%v\n`); code != 1 || !strings.Contains(out, `record 1: bad header "noequals"`) {
		t.Errorf("bad header: %d %q", code, out)
	}
}

// TestBinaryConsumeGroupProtocol: consume -g --group-protocol consumer joins
// a KIP-848 group (described as type consumer), resumes at its commit, and
// bad combinations are usage errors.
func TestBinaryConsumeGroupProtocol(t *testing.T) {
	bin, addr, _ := startBinary(t)
	env := []string{"SLUICE_BOOTSTRAP=" + addr}
	mustCLI(t, bin, env, []string{"topic", "create", "gp", "-p", "2"})
	runCLIInput(t, bin, env, "a\nb\n", "produce", "gp", "-p", "0", "-q")
	runCLIInput(t, bin, env, "c\n", "produce", "gp", "-p", "1", "-q")
	for _, assignor := range []string{"uniform", "range"} {
		group := "next-" + assignor
		got := mustCLI(t, bin, env, []string{"consume", "gp", "-g", group, "--group-protocol", "consumer", "--group-remote-assignor", assignor, "-f", `%v\n`})
		if strings.Count(got, "\n") != 3 {
			t.Fatalf("%s: consume: %q", assignor, got)
		}
		mustCLI(t, bin, env, []string{"group", "list", "--type", "consumer"}, group+" consumer ")
		mustCLI(t, bin, env, []string{"group", "describe", group}, "TYPE consumer", "TOTAL LAG 0")
	}
	runCLIInput(t, bin, env, "d\n", "produce", "gp", "-p", "1", "-q")
	if got := mustCLI(t, bin, env, []string{"consume", "gp", "-g", "next-uniform", "--group-protocol", "consumer", "-f", `%v\n`}); got != "d\n" {
		t.Errorf("resume at the commit: %q", got)
	}
	for _, args := range [][]string{
		{"consume", "gp", "--group-protocol", "consumer"},
		{"consume", "gp", "-g", "x", "--group-protocol", "next"},
		{"consume", "gp", "-g", "x", "--group-remote-assignor", "range"},
		{"consume", "gp", "-g", "x", "--group-protocol", "consumer", "--group-remote-assignor", "sticky"},
	} {
		if out, code := runCLI(t, bin, env, args...); code != 2 {
			t.Errorf("%v: exit %d %q, want 2", args, code, out)
		}
	}
}

// TestBinaryShareGroupDescribe: a share group is listed with its type and
// described with its member and the share-partition start offsets.
func TestBinaryShareGroupDescribe(t *testing.T) {
	bin, addr, _ := startBinary(t)
	env := []string{"SLUICE_BOOTSTRAP=" + addr}
	mustCLI(t, bin, env, []string{"topic", "create", "sq"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup("queue"), kgo.ConsumeTopics("sq"), kgo.ClientID("share-member"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The group starts at the end (share.auto.offset.reset=latest): produce
	// while polling until records arrive, then until describe shows them
	// acknowledged (the next poll acknowledges the previous records).
	consumed := 0
	var out string
	for {
		if consumed == 0 {
			runCLIInput(t, bin, env, "x\ny\n", "produce", "sq", "-q")
		}
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		consumed += len(cl.PollFetches(pctx).Records())
		pcancel()
		out, _ = runCLI(t, bin, env, "group", "describe", "queue")
		s := squeeze(out)
		if consumed > 0 && strings.Contains(s, "TYPE share") && strings.Contains(s, "MEMBERS 1") &&
			regexp.MustCompile(`(?m)^sq +0 +(\d+) +(\d+) +0 +\S+ +share-member `).MatchString(out) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("share group never described with its member and offsets (%d records consumed):\n%s", consumed, out)
		}
	}
	if !strings.Contains(out, "START-OFFSET") {
		t.Errorf("share group columns:\n%s", out)
	}
	mustCLI(t, bin, env, []string{"group", "list"}, "queue share ")
	mustCLI(t, bin, env, []string{"group", "list", "--type", "share"}, "queue share ")

	// Once its member has left, the share group's start offset is moved back
	// to the start (a dry run first), and the group is deleted.
	cl.Close()
	for !strings.Contains(squeeze(out), "STATE Empty") {
		if ctx.Err() != nil {
			t.Fatalf("share group never empty after its member left:\n%s", out)
		}
		out, _ = runCLI(t, bin, env, "group", "describe", "queue")
	}
	dry := mustCLI(t, bin, env, []string{"group", "seek", "queue", "--to", "start"}, "dry run")
	if !regexp.MustCompile(`(?m)^sq +0 +[1-9]\d* +0$`).MatchString(dry) {
		t.Fatalf("share group seek plan:\n%s", dry)
	}
	mustCLI(t, bin, env, []string{"group", "seek", "queue", "--to", "start", "--execute"}, "set the new start offsets of share group queue")
	out = mustCLI(t, bin, env, []string{"group", "describe", "queue"})
	if !regexp.MustCompile(`(?m)^sq +0 +0 +([1-9]\d*) +([1-9]\d*) `).MatchString(out) {
		t.Fatalf("share group after seeking to the start:\n%s", out)
	}
	mustCLI(t, bin, env, []string{"group", "delete", "queue"}, "deleted group queue")
	if out, _ := runCLI(t, bin, env, "group", "list"); strings.Contains(out, "queue") {
		t.Fatalf("deleted share group still listed:\n%s", out)
	}
}

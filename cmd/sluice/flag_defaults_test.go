package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestFlagDefaultsAsTyped checks the help of string defaults with escapes
// and of flags whose usage already explains the default.
func TestFlagDefaultsAsTyped(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("f", `%v\n`, "output `format`")
	fs.String("m", "127.0.0.1:9095", "`host:port` (default: from --config, else 127.0.0.1:9095)")
	fs.Int("p", -1, "`partition`; -1: by key hash")
	var b bytes.Buffer
	fs.SetOutput(&b)
	printFlagDefaults(fs)
	got := b.String()
	for _, want := range []string{`output format (default "%v\n")` + "\n", "(default: from --config, else 127.0.0.1:9095)\n", "by key hash (default -1)\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("help lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `\\n`) || strings.Count(got, "(default") != 3 {
		t.Errorf("doubled escape or default:\n%s", got)
	}
	if partitionCount(1) != "1 partition" || partitionCount(0) != "0 partitions" || partitionCount(3) != "3 partitions" {
		t.Errorf("partitionCount: %q %q %q", partitionCount(1), partitionCount(0), partitionCount(3))
	}
}

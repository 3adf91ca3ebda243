package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestScramUserValidatesFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scram-user", "-password", "p"}, "-user and -password are required"},
		{[]string{"scram-user", "-user", "u"}, "-user and -password are required"},
		{[]string{"scram-user", "-user", "u", "-password", "p", "-mechanism", "PLAIN"}, `unknown mechanism "PLAIN"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

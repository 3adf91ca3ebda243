package main

import (
	"bytes"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// printFlagDefaults is fs.PrintDefaults with two fixes for people reading
// it: a string default is shown as it is typed on a command line ("%v\n",
// not the Go-quoted "%v\\n"), and a flag whose usage already explains its
// default (“(default: …)”, “(default ./data …)”) gets no second one.
func printFlagDefaults(fs *flag.FlagSet) {
	out := fs.Output()
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	out.Write([]byte(fixFlagDefaults(b.String())))
}

func fixFlagDefaults(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		j := strings.LastIndex(l, " (default ")
		if j < 0 || !strings.HasSuffix(l, ")") {
			continue
		}
		if strings.Contains(l[:j], "(default") {
			lines[i] = l[:j]
			continue
		}
		val := l[j+len(" (default ") : len(l)-1]
		if len(val) >= 2 && val[0] == '"' {
			if u, err := strconv.Unquote(val); err == nil && !strings.ContainsAny(u, "\"\n\t") {
				lines[i] = l[:j] + ` (default "` + u + `")`
			}
		}
	}
	return strings.Join(lines, "\n")
}

// partitionCount is "1 partition", "3 partitions".
func partitionCount(n int) string {
	if n == 1 {
		return "1 partition"
	}
	return fmt.Sprintf("%d partitions", n)
}

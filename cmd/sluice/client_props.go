package main

import (
	"fmt"
	"io"
	"sort"
)

// clientPropsUsed are the Kafka client properties the client commands read
// (client_config.go); sasl.username and sasl.password are what --user and
// --password set.
var clientPropsUsed = []string{
	"bootstrap.servers", "client.id", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
	"sasl.username", "sasl.password",
	"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.certificates",
}

// warnUnusedProps prints, as Kafka's clients log, a warning for each
// property given (profile, --command-config or -X) that the commands do not
// use, with the used name it is nearest to if that looks like a typo
// (-X bootstrap.server=... would otherwise be silently ignored).
func warnUnusedProps(w io.Writer, props map[string]string) {
	used := map[string]bool{}
	for _, n := range clientPropsUsed {
		used[n] = true
	}
	var unused []string
	for n := range props {
		if !used[n] {
			unused = append(unused, n)
		}
	}
	sort.Strings(unused)
	for _, n := range unused {
		hint := ""
		if s := nearestName(n, clientPropsUsed); s != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", s)
		}
		fmt.Fprintf(w, "sluice: warning: the client property %s was supplied but the sluice commands do not use it%s\n", n, hint)
	}
}

// nearestName returns the name in names at most a third of n's length (and
// at most 3) single-byte edits away from n, or "".
func nearestName(n string, names []string) string {
	limit := min(3, max(1, len(n)/3))
	best, bestD := "", limit+1
	for _, c := range names {
		if d := levenshtein(n, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

package config

import "fmt"

// Suggestions for unknown config names: "did you mean ...?", from the
// config table. A topic-level name in a broker file points at its broker
// synonym (retention.ms -> log.retention.ms), a broker name given as a topic
// config at the topic name it sets the default of, and anything else at the
// nearest known name by edit distance, if one is close enough to be a typo.

// SuggestBroker returns the broker config name most likely meant by the
// unknown name, or "".
func SuggestBroker(name string) string {
	if i, ok := topicIndex[name]; ok {
		for _, syn := range topicDefs[i].Synonyms {
			if _, ok := brokerIndex[syn]; ok {
				return syn
			}
		}
	}
	return nearest(name, brokerDefs)
}

// SuggestTopic returns the topic config name most likely meant by the
// unknown name, or "".
func SuggestTopic(name string) string {
	if _, ok := brokerIndex[name]; ok {
		for _, d := range topicDefs {
			for _, syn := range d.Synonyms {
				if syn == name {
					return d.Name
				}
			}
		}
	}
	return nearest(name, topicDefs)
}

// didYouMean is the suffix for an unknown-name message.
func didYouMean(suggestion string) string {
	if suggestion == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", suggestion)
}

// nearest returns the name in defs closest to name, if at most a third of
// name's length (and at most 3) edits away; ties go to the first in order.
func nearest(name string, defs []Def) string {
	limit := min(3, max(1, len(name)/3))
	best, bestD := "", limit+1
	for _, d := range defs {
		if dist := editDistance(name, d.Name, bestD); dist < bestD {
			best, bestD = d.Name, dist
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b
// (insertions, deletions, substitutions and swaps of adjacent bytes), or
// any value >= bound once it is known to reach bound.
func editDistance(a, b string, bound int) int {
	if d := len(a) - len(b); d >= bound || -d >= bound {
		return bound
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= bound {
			return bound
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

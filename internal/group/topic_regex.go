package group

import (
	"regexp"
	"sync"
)

// KIP-848 regex subscriptions (ConsumerGroupHeartbeat's SubscribedTopicRegex).
//
// Kafka compiles the regex with RE2J and a topic matches when the whole name matches
// (Matcher.matches), so "orders" matches only the topic "orders" and "orders.*" every
// topic whose name starts with "orders". Sluice compiles it with Go's regexp (RE2,
// which RE2J ports) anchored at both ends, which gives the same answers for the
// syntax both accept. Differences (RE2 and RE2J differ only at the edges): Java-only
// character classes such as \p{javaLowerCase} are rejected with
// INVALID_REGULAR_EXPRESSION; Go's (?U) (ungreedy) flag is accepted. Every topic
// counts, internal ones too, as in Kafka; there is no authorizer, so no topic is
// filtered out for lack of DESCRIBE permission.

// topicRegexCache holds compiled subscription regexes by pattern; it is cleared when it
// grows past topicRegexCacheMax patterns.
var topicRegexCache struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

const topicRegexCacheMax = 1024

// compileTopicRegex compiles a SubscribedTopicRegex for whole-name matching.
func compileTopicRegex(pattern string) (*regexp.Regexp, error) {
	topicRegexCache.Lock()
	defer topicRegexCache.Unlock()
	if re, ok := topicRegexCache.m[pattern]; ok {
		return re, nil
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		// Report the error against the pattern as given, not the anchored one.
		if _, err2 := regexp.Compile(pattern); err2 != nil {
			err = err2
		}
		return nil, err
	}
	if topicRegexCache.m == nil || len(topicRegexCache.m) >= topicRegexCacheMax {
		topicRegexCache.m = make(map[string]*regexp.Regexp)
	}
	topicRegexCache.m[pattern] = re
	return re, nil
}

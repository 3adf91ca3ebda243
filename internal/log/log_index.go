package log

import (
	"slices"
	"strings"
)

// logIndex holds the manager's logs by topic, each topic's in a slice
// indexed by partition: with 100,000 partitions every pass at start (entering
// the logs, the broker's reconciliation, each publication of the metadata)
// looked each one up in a map keyed by topic name and partition, hashing and
// comparing the name every time. Guarded by Manager.mu.
type logIndex struct {
	topics map[string]*topicLogs
	n      int
}

type topicLogs struct {
	logs []*Log // by partition; nil where there is none
	n    int
}

func newLogIndex() logIndex { return logIndex{topics: map[string]*topicLogs{}} }

func (x *logIndex) get(tp TopicPartition) *Log {
	t := x.topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.logs) {
		return nil
	}
	return t.logs[tp.Partition]
}

// set enters l as tp's log (tp has none).
func (x *logIndex) set(tp TopicPartition, l *Log) {
	t := x.topics[tp.Topic]
	if t == nil {
		t = &topicLogs{}
		x.topics[tp.Topic] = t
	}
	if p := int(tp.Partition); p >= len(t.logs) {
		t.logs = slices.Grow(t.logs, p+1-len(t.logs))[:p+1]
	}
	if t.logs[tp.Partition] == nil {
		t.n++
		x.n++
	}
	t.logs[tp.Partition] = l
}

// remove takes tp's log out and returns it (nil: there was none).
func (x *logIndex) remove(tp TopicPartition) *Log {
	l := x.get(tp)
	if l == nil {
		return nil
	}
	t := x.topics[tp.Topic]
	t.logs[tp.Partition] = nil
	t.n--
	x.n--
	if t.n == 0 {
		delete(x.topics, tp.Topic)
	}
	return l
}

func (x *logIndex) len() int { return x.n }

// each calls f for every log, in no particular order.
func (x *logIndex) each(f func(*Log)) {
	for _, t := range x.topics {
		for _, l := range t.logs {
			if l != nil {
				f(l)
			}
		}
	}
}

// sorted returns the partitions by topic, then partition.
func (x *logIndex) sorted() []TopicPartition {
	names := make([]string, 0, len(x.topics))
	for name := range x.topics {
		names = append(names, name)
	}
	slices.SortFunc(names, strings.Compare)
	out := make([]TopicPartition, 0, x.n)
	for _, name := range names {
		for p, l := range x.topics[name].logs {
			if l != nil {
				out = append(out, TopicPartition{name, int32(p)})
			}
		}
	}
	return out
}

package metadata

import (
	"maps"
	"reflect"
	"sort"
	"unsafe"
)

// The controller's periodic checks (reassignment completion, elections from
// the eligible leader replicas, unclean elections) only act on partitions
// that are being reassigned, have no leader, or whose leader is not live.
// Each image built by Apply keeps the names of the topics holding such a
// partition, updated for the topics a batch touched (and rebuilt when a
// batch changes the brokers, which changes who is live), so those checks
// walk only these topics instead of every partition, several times a second.

// attention is an image's index of topics needing the controller's
// attention. Never modified once published.
type attention struct {
	topics map[string]bool
	// brokers is the Brokers map the index was built with: a copy of an
	// image given other brokers (the controller's "as if fenced" images)
	// does not use the index.
	brokers unsafe.Pointer
}

func mapID(m map[int32]*BrokerRegistration) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}

// NeedsAttention reports whether the controller's checks may act on p: a
// reassignment is in progress, it has no leader, or its leader is not live.
func (im *Image) NeedsAttention(p *Partition) bool {
	return p.Reassigning() || p.Leader == NoLeader || !im.IsLive(p.Leader)
}

func (im *Image) topicNeedsAttention(t *Topic) bool {
	for i := range t.Partitions {
		if im.NeedsAttention(&t.Partitions[i]) {
			return true
		}
	}
	return false
}

// AttentionTopics returns, sorted by name, the topics with a partition for
// which NeedsAttention holds; possibly more (every topic, for an image not
// built by Apply), never fewer.
func (im *Image) AttentionTopics() []*Topic {
	if im.attn == nil || im.attn.brokers != mapID(im.Brokers) {
		return im.SortedTopics()
	}
	out := make([]*Topic, 0, len(im.attn.topics))
	for name := range im.attn.topics {
		if t, ok := im.Topics[name]; ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// updateAttention sets the index of im (just built from prev by a batch that
// touched the named topics and, when brokersChanged, the brokers).
func (im *Image) updateAttention(prev *Image, touched map[string]bool, brokersChanged bool) {
	if prev.attn == nil || brokersChanged || prev.attn.brokers != mapID(im.Brokers) {
		a := &attention{topics: map[string]bool{}, brokers: mapID(im.Brokers)}
		for name, t := range im.Topics {
			if im.topicNeedsAttention(t) {
				a.topics[name] = true
			}
		}
		im.attn = a
		return
	}
	var topics map[string]bool // copied on the first change
	for name := range touched {
		t, ok := im.Topics[name]
		want := ok && im.topicNeedsAttention(t)
		if prev.attn.topics[name] == want {
			continue
		}
		if topics == nil {
			topics = maps.Clone(prev.attn.topics)
		}
		if want {
			topics[name] = true
		} else {
			delete(topics, name)
		}
	}
	if topics != nil {
		im.attn = &attention{topics: topics, brokers: prev.attn.brokers}
	}
}

package replica

import (
	"github.com/sluice-broker/sluice/internal/log"
)

// High watermark checkpoints. A replicated partition's high watermark is
// not in its log: at start it is taken from the broker's checkpoint
// (Kafka's replication-offset-checkpoint, written by the broker), capped at
// the log end, so a restarted broker that becomes leader never exposes a
// lower high watermark than it had acknowledged, and a follower serves
// consumers (KIP-392) what was committed before the restart.

// SetCheckpoint installs the high watermarks read from the checkpoint at
// start; partitions first applied afterwards start from them.
func (m *Manager) SetCheckpoint(hw *log.Offsets) {
	m.mu.Lock()
	m.ckpt = hw
	m.mu.Unlock()
}

func (m *Manager) checkpointed(tp log.TopicPartition) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ckpt.Get(tp.Topic, tp.Partition)
}

// HighWatermarks returns every replicated partition's high watermark (for
// the checkpoint).
func (m *Manager) HighWatermarks() *log.Offsets {
	m.mu.RLock()
	parts := make([]*Partition, 0, m.parts.Len())
	m.parts.Each(func(p *Partition) { // no need to sort: the checkpoint's encoding does
		parts = append(parts, p)
	})
	m.mu.RUnlock()
	out := log.NewOffsets()
	for _, p := range parts {
		if p.Role() == None {
			continue
		}
		tp := log.TopicPartition{Topic: p.topic, Partition: p.index}
		if !p.log.OffsetsKnown() {
			// Not recovered yet since an unclean shutdown: reading its
			// high watermark would recover it here (every partition,
			// one by one, on the checkpoint writer). Its checkpointed
			// value stays.
			if hw, ok := m.checkpointed(tp); ok {
				out.Set(tp.Topic, tp.Partition, hw)
			}
			continue
		}
		out.Set(tp.Topic, tp.Partition, p.log.HighWatermark())
	}
	return out
}

// HighWatermarkKnown reports whether a leader's high watermark has reached
// the start of its leader epoch (Kafka's rule for ListOffsets: until then a
// new leader answers OFFSET_NOT_AVAILABLE, as its high watermark may be
// lower than the previous leader's).
func (p *Partition) HighWatermarkKnown() bool {
	st := p.st.Load()
	if st.Leader != p.self {
		return true
	}
	p.lv.mu.Lock()
	if p.lv.epoch != st.LeaderEpoch || p.lv.followers == nil {
		// The state says this broker leads, but Apply has not set up
		// the leadership yet (its high watermark may still be the log
		// start of a fresh partition): not known yet.
		p.lv.mu.Unlock()
		return false
	}
	start := p.lv.epochStart(p.log)
	p.lv.mu.Unlock()
	return p.log.HighWatermark() >= start
}

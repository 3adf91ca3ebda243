package compact

import (
	"hash/maphash"
)

// slotSize is the memory one map slot takes: a 128-bit key hash and an
// offset, as Apache Kafka's SkimpyOffsetMap (which stores an MD5 and an
// offset) — the dedupe buffer size divided by it is the number of slots.
const slotSize = 24

type slot struct {
	h1, h2 uint64
	off    int64 // offset + 1; 0 marks an empty slot
}

// offsetMap maps a record key to the latest offset seen for it, in a fixed
// amount of memory: an open-addressing table of 128-bit key hashes (two
// independently seeded maphash sums — a false match needs both to collide)
// with linear probing. It never grows: once it holds maxEntries keys, put of
// a new key fails and the caller cleans what the map covers.
type offsetMap struct {
	slots      []slot
	entries    int
	maxEntries int
	seed1      maphash.Seed
	seed2      maphash.Seed
	// latest is the largest offset the map accounts for (-1 if none):
	// records above it were not looked at and must be kept.
	latest int64
}

// newOffsetMap sizes a map for memBytes of memory filled up to loadFactor.
func newOffsetMap(memBytes int64, loadFactor float64) *offsetMap {
	n := memBytes / slotSize
	if n < 1 {
		n = 1
	}
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = 0.9
	}
	m := &offsetMap{
		slots:      make([]slot, n),
		maxEntries: int(float64(n) * loadFactor),
		seed1:      maphash.MakeSeed(),
		seed2:      maphash.MakeSeed(),
		latest:     -1,
	}
	if m.maxEntries >= int(n) {
		m.maxEntries = int(n) - 1 // keep one empty slot so probing ends
	}
	return m
}

// memBytes is the memory the table takes.
func (m *offsetMap) memBytes() int64 { return int64(len(m.slots)) * slotSize }

func (m *offsetMap) reset() {
	clear(m.slots)
	m.entries = 0
	m.latest = -1
}

func (m *offsetMap) hash(key []byte) (uint64, uint64) {
	return maphash.Bytes(m.seed1, key), maphash.Bytes(m.seed2, key)
}

// put records off as the latest offset of key. It returns false, changing
// nothing, when key is new and the map is full.
func (m *offsetMap) put(key []byte, off int64) bool {
	h1, h2 := m.hash(key)
	n := uint64(len(m.slots))
	for i := h1 % n; ; i++ {
		if i == n {
			i = 0
		}
		s := &m.slots[i]
		if s.off == 0 {
			if m.entries >= m.maxEntries {
				return false
			}
			*s = slot{h1: h1, h2: h2, off: off + 1}
			m.entries++
			return true
		}
		if s.h1 == h1 && s.h2 == h2 {
			s.off = off + 1
			return true
		}
	}
}

// get returns the latest offset recorded for key, or -1.
func (m *offsetMap) get(key []byte) int64 {
	h1, h2 := m.hash(key)
	n := uint64(len(m.slots))
	for i := h1 % n; ; i++ {
		if i == n {
			i = 0
		}
		s := &m.slots[i]
		if s.off == 0 {
			return -1
		}
		if s.h1 == h1 && s.h2 == h2 {
			return s.off - 1
		}
	}
}

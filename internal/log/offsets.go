package log

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluice-broker/sluice/internal/tpindex"
)

// Offsets holds an offset per topic partition, by topic name and then by
// partition (tpindex): the checkpoints of recovery points, log start
// offsets and high watermarks, each read at start with one entry per
// partition and looked up once per partition entered. With 100,000
// partitions a map keyed by (topic name, partition) spent most of that
// time hashing and comparing names. The zero Offsets is not usable
// (NewOffsets); it is not safe for concurrent use.
type Offsets struct {
	ix    tpindex.Index[int64]
	chunk []int64 // where new values are stored, a chunk at a time
}

// offsetsChunk is how many values Offsets allocates at once.
const offsetsChunk = 1024

// NewOffsets returns an empty Offsets.
func NewOffsets() *Offsets { return &Offsets{ix: tpindex.New[int64]()} }

// Get returns a partition's offset and whether it has one.
func (o *Offsets) Get(topic string, partition int32) (int64, bool) {
	if o == nil {
		return 0, false
	}
	if v := o.ix.Get(topic, partition); v != nil {
		return *v, true
	}
	return 0, false
}

// Set sets a partition's offset. A negative partition is not held.
func (o *Offsets) Set(topic string, partition int32, off int64) {
	if v := o.ix.Get(topic, partition); v != nil {
		*v = off
		return
	}
	if len(o.chunk) == cap(o.chunk) {
		o.chunk = make([]int64, 0, offsetsChunk)
	}
	o.chunk = append(o.chunk, off)
	o.ix.Set(topic, partition, &o.chunk[len(o.chunk)-1])
}

// Len returns how many partitions have an offset (0 for nil).
func (o *Offsets) Len() int {
	if o == nil {
		return 0
	}
	return o.ix.Len()
}

// Sorted calls f for every partition by topic name, then partition.
func (o *Offsets) Sorted(f func(topic string, partition int32, off int64)) {
	if o == nil {
		return
	}
	o.ix.Sorted(func(topic string, partition int32, v *int64) { f(topic, partition, *v) })
}

// Equal reports whether o and p hold the same offsets (nil holds none).
func (o *Offsets) Equal(p *Offsets) bool {
	if o.Len() != p.Len() {
		return false
	}
	eq := true
	o.Sorted(func(topic string, partition int32, off int64) {
		if eq {
			v, ok := p.Get(topic, partition)
			eq = ok && v == off
		}
	})
	return eq
}

// Map returns the offsets as a map.
func (o *Offsets) Map() map[TopicPartition]int64 {
	out := make(map[TopicPartition]int64, o.Len())
	o.Sorted(func(topic string, partition int32, off int64) { out[TopicPartition{topic, partition}] = off })
	return out
}

// OffsetsOf returns m as Offsets.
func OffsetsOf(m map[TopicPartition]int64) *Offsets {
	o := NewOffsets()
	for tp, off := range m {
		o.Set(tp.Topic, tp.Partition, off)
	}
	return o
}

// Format returns the checkpoint text of o ("<topic> <partition> <offset>"
// entries, sorted by topic and partition).
func (o *Offsets) Format() []byte {
	b := make([]byte, 0, 32+o.Len()*24)
	b = append(b, "0\n"...)
	b = strconv.AppendInt(b, int64(o.Len()), 10)
	b = append(b, '\n')
	o.Sorted(func(topic string, partition int32, off int64) {
		b = append(b, topic...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(partition), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, off, 10)
		b = append(b, '\n')
	})
	return b
}

// ParseOffsets parses checkpoint text whose entries are "<topic>
// <partition> <offset>" (recovery-point, log-start-offset and
// high-watermark checkpoints), as strictly as parseCheckpoint: the header
// "0", an entry count equal to the entries that follow, three fields on
// each. With nonNegative, a negative partition or offset is an error too.
// Consecutive entries of one topic (a written checkpoint is sorted) share
// one copy of its name.
func ParseOffsets(data []byte, nonNegative bool) (*Offsets, error) {
	rest := data
	next := func() ([]byte, bool) {
		if len(rest) == 0 {
			return nil, false
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			l := rest
			rest = nil
			return dropCR(l), true
		}
		l := rest[:i]
		rest = rest[i+1:]
		return dropCR(l), true
	}
	head, ok := next()
	if !ok || string(bytes.TrimSpace(head)) != "0" {
		return nil, errors.New("bad header")
	}
	cl, ok := next()
	n, err := strconv.Atoi(string(bytes.TrimSpace(cl)))
	if !ok || err != nil || n < 0 {
		return nil, errors.New("bad entry count")
	}
	o := NewOffsets()
	topic := ""
	seen := 0
	var f [3][]byte
	for l, ok := next(); ok; l, ok = next() {
		seen++
		if seen > n {
			return nil, errors.New("bad entry count")
		}
		if nf := fields3(l, &f); nf != 3 {
			return nil, fmt.Errorf("bad entry %q", l)
		}
		p, err1 := strconv.ParseInt(string(f[1]), 10, 32)
		off, err2 := strconv.ParseInt(string(f[2]), 10, 64)
		if err1 != nil || err2 != nil || nonNegative && (p < 0 || off < 0) {
			return nil, fmt.Errorf("bad entry %q", l)
		}
		if string(f[0]) != topic {
			topic = string(f[0])
		}
		o.Set(topic, int32(p), off)
	}
	if seen != n {
		return nil, errors.New("bad entry count")
	}
	return o, nil
}

// dropCR drops a trailing \r (bufio.ScanLines does, for parseCheckpoint).
func dropCR(l []byte) []byte {
	if len(l) > 0 && l[len(l)-1] == '\r' {
		return l[:len(l)-1]
	}
	return l
}

// fields3 splits l at runs of ASCII white space into at most three fields
// in f and returns how many it found (4 means more than three).
func fields3(l []byte, f *[3][]byte) int {
	n := 0
	for i := 0; i < len(l); {
		for i < len(l) && isSpace(l[i]) {
			i++
		}
		if i == len(l) {
			break
		}
		j := i
		for j < len(l) && !isSpace(l[j]) {
			j++
		}
		if n == 3 {
			return 4
		}
		f[n] = l[i:j]
		n++
		i = j
	}
	return n
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' }

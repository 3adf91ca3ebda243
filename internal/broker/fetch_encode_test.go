package broker

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/wire"
)

// segFile is a segment-like file of random bytes that record ranges point
// into.
type segFile struct {
	f    *os.File
	data []byte
}

func newSegFile(t testing.TB, r *rand.Rand, size int) *segFile {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	name := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &segFile{f: f, data: data}
}

// randomRanges picks 1–3 ranges of sf and returns them with their bytes.
func (sf *segFile) randomRanges(r *rand.Rand) ([]log.FileRange, []byte) {
	var rs []log.FileRange
	var b []byte
	for range r.IntN(3) + 1 {
		pos := r.Int64N(int64(len(sf.data)))
		size := r.Int64N(min(int64(len(sf.data))-pos, 3000)) + 1
		rs = append(rs, log.FileRange{File: sf.f, Pos: pos, Size: size})
		b = append(b, sf.data[pos:pos+size]...)
	}
	return rs, b
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func randTags(r *rand.Rand, t *kmsg.Tags) {
	if r.IntN(4) != 0 {
		return
	}
	for range r.IntN(3) + 1 {
		t.Set(uint32(10+r.IntN(200)), randBytes(r, r.IntN(300)))
	}
}

func randInt32(r *rand.Rand) int32 {
	if r.IntN(3) == 0 {
		return -1
	}
	return int32(r.Uint32())
}

func randInt64(r *rand.Rand) int64 {
	if r.IntN(3) == 0 {
		return -1
	}
	return int64(r.Uint64())
}

// randomFetchResponse builds a response at version using every field, and
// the file ranges that stand for some partitions' records. It returns the
// response with those records filled in (what kmsg encodes) and the one
// with ranges (what the zero-copy encoder encodes).
func randomFetchResponse(r *rand.Rand, version int16, sf *segFile) (want *kmsg.FetchResponse, got *fetchResponse) {
	want = kmsg.NewPtrFetchResponse()
	want.Version = version
	want.ThrottleMillis = int32(r.Uint32())
	want.ErrorCode = int16(r.Uint32())
	want.SessionID = int32(r.Uint32())
	var records [][]log.FileRange
	for range r.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(randBytes(r, r.IntN(300)))
		copy(t.TopicID[:], randBytes(r, 16))
		for range r.IntN(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(r.Uint32())
			p.ErrorCode = int16(r.Uint32())
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = randInt64(r), randInt64(r), randInt64(r)
			switch r.IntN(3) {
			case 0: // null
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			default:
				for range r.IntN(4) + 1 {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = int64(r.Uint64()), int64(r.Uint64())
					randTags(r, &a.UnknownTags)
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			p.PreferredReadReplica = randInt32(r)
			if r.IntN(2) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = randInt32(r), randInt64(r)
				randTags(r, &p.DivergingEpoch.UnknownTags)
			}
			if r.IntN(2) == 0 {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = randInt32(r), randInt32(r)
				randTags(r, &p.CurrentLeader.UnknownTags)
			}
			if r.IntN(2) == 0 {
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = randInt64(r), randInt32(r)
				randTags(r, &p.SnapshotID.UnknownTags)
			}
			randTags(r, &p.UnknownTags)
			var ranges []log.FileRange
			switch r.IntN(4) {
			case 0:
				p.RecordBatches = nil
			case 1:
				p.RecordBatches = []byte{}
			case 2:
				p.RecordBatches = randBytes(r, r.IntN(200))
			default:
				ranges, p.RecordBatches = sf.randomRanges(r)
			}
			records = append(records, ranges)
			t.Partitions = append(t.Partitions, p)
		}
		randTags(r, &t.UnknownTags)
		want.Topics = append(want.Topics, t)
	}
	for range r.IntN(3) {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Port = int32(r.Uint32()), int32(r.Uint32())
		b.Host = string(randBytes(r, r.IntN(50)))
		if r.IntN(2) == 0 {
			rack := string(randBytes(r, r.IntN(20)))
			b.Rack = &rack
		}
		randTags(r, &b.UnknownTags)
		want.Brokers = append(want.Brokers, b)
	}
	randTags(r, &want.UnknownTags)
	return want, withRanges(want, records)
}

// withRanges copies want, dropping the records of partitions that have
// ranges (as handleFetch builds it: they are never encoded from memory).
func withRanges(want *kmsg.FetchResponse, records [][]log.FileRange) *fetchResponse {
	resp := *want
	resp.Topics = make([]kmsg.FetchResponseTopic, len(want.Topics))
	i := 0
	for ti, t := range want.Topics {
		t.Partitions = append([]kmsg.FetchResponseTopicPartition(nil), t.Partitions...)
		for pi := range t.Partitions {
			if records[i] != nil {
				t.Partitions[pi].RecordBatches = []byte("must not be sent")
			}
			i++
		}
		resp.Topics[ti] = t
	}
	return &fetchResponse{FetchResponse: &resp, records: records}
}

// checkFetchEncoding compares the zero-copy encoding with kmsg's.
func checkFetchEncoding(t *testing.T, want *kmsg.FetchResponse, got *fetchResponse) {
	t.Helper()
	wantBytes := want.AppendTo([]byte("prefix"))
	p := &wire.Parts{Buf: []byte("prefix")}
	got.AppendParts(p)
	nranges := 0
	for _, rs := range got.records {
		nranges += len(rs)
	}
	if p.Sections() != nranges {
		t.Fatalf("v%d: %d file sections, want %d (records copied?)", want.Version, p.Sections(), nranges)
	}
	if p.Size() != int64(len(wantBytes)) {
		t.Fatalf("v%d: size %d, want %d", want.Version, p.Size(), len(wantBytes))
	}
	gotBytes, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotBytes, wantBytes) {
		i := 0
		for i < len(gotBytes) && gotBytes[i] == wantBytes[i] {
			i++
		}
		t.Fatalf("v%d: encodings differ at byte %d of %d", want.Version, i, len(wantBytes))
	}
	if flat := got.AppendTo([]byte("prefix")); !bytes.Equal(flat, wantBytes) {
		t.Fatalf("v%d: AppendTo differs from kmsg", want.Version)
	}
}

// TestFetchEncodeMatchesKmsg: for random responses at every served
// version, the zero-copy encoding is byte-identical to kmsg's.
func TestFetchEncodeMatchesKmsg(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	sf := newSegFile(t, r, 64<<10)
	for version := int16(4); version <= 17; version++ {
		for range 150 {
			want, got := randomFetchResponse(r, version, sf)
			checkFetchEncoding(t, want, got)
		}
	}
}

// FuzzFetchEncode decodes arbitrary bytes as a FetchResponse and, when kmsg
// accepts them, moves the record sets into a file and checks that the
// zero-copy encoding still matches kmsg's.
func FuzzFetchEncode(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 5))
	sf := newSegFile(f, r, 4<<10)
	for version := int16(4); version <= 17; version++ {
		want, _ := randomFetchResponse(r, version, sf)
		f.Add(uint8(version), want.AppendTo(nil))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, v uint8, data []byte) {
		version := 4 + int16(v%14)
		want := kmsg.NewPtrFetchResponse()
		want.Version = version
		if err := want.ReadFrom(data); err != nil {
			return
		}
		// Put every non-null record set into one file, back to back.
		var all []byte
		var records [][]log.FileRange
		type at struct{ pos, size int64 }
		var spans []at
		for _, tp := range want.Topics {
			for _, p := range tp.Partitions {
				if p.RecordBatches == nil || len(p.RecordBatches) == 0 {
					spans = append(spans, at{-1, 0})
					continue
				}
				spans = append(spans, at{int64(len(all)), int64(len(p.RecordBatches))})
				all = append(all, p.RecordBatches...)
			}
		}
		file, err := os.CreateTemp(dir, "seg")
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		if _, err := file.Write(all); err != nil {
			t.Fatal(err)
		}
		for _, s := range spans {
			if s.pos < 0 {
				records = append(records, nil)
				continue
			}
			records = append(records, []log.FileRange{{File: file, Pos: s.pos, Size: s.size}})
		}
		checkFetchEncoding(t, want, withRanges(want, records))
	})
}

// BenchmarkFetchEncode compares building a 4-partition, 4 MiB Fetch
// response the old way (records read into memory, kmsg encoding) with the
// zero-copy encoding (records left as file sections). The sending itself
// (write vs sendfile) is not included.
func BenchmarkFetchEncode(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	sf := newSegFile(b, r, 4<<20)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 13
	t := kmsg.NewFetchResponseTopic()
	var records [][]log.FileRange
	for i := range 4 {
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = int32(i)
		t.Partitions = append(t.Partitions, p)
		records = append(records, []log.FileRange{{File: sf.f, Pos: int64(i) << 20, Size: 1 << 20}})
	}
	resp.Topics = append(resp.Topics, t)
	b.Run("read+kmsg", func(b *testing.B) {
		b.SetBytes(4 << 20)
		for b.Loop() {
			fr := &fetchResponse{FetchResponse: resp, records: records}
			_ = fr.AppendTo(make([]byte, 0, 128))
		}
	})
	b.Run("parts", func(b *testing.B) {
		b.SetBytes(4 << 20)
		p := &wire.Parts{}
		for b.Loop() {
			p.Buf = p.Buf[:0]
			fr := &fetchResponse{FetchResponse: resp, records: records}
			fr.AppendParts(p)
			p = &wire.Parts{Buf: p.Buf[:0]}
		}
	})
}

package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sizePrefixed(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// Pooled frames carry exactly the bytes of each frame, whether the buffer
// is new or reused from a larger earlier frame of the same class.
func TestReadFramePooledReuse(t *testing.T) {
	var stream []byte
	var want [][]byte
	for i, n := range []int{0, 1, 3000, 4096, 4097, 20000, 300, 1 << 20, 5 << 20, 17 << 20, 10} {
		b := bytes.Repeat([]byte{byte(i + 1)}, n)
		want = append(want, b)
		stream = append(stream, sizePrefixed(b)...)
	}
	r := bytes.NewReader(stream)
	for i, w := range want {
		fb, err := readFramePooled(r, 32<<20)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(fb.b, w) {
			t.Fatalf("frame %d: wrong bytes", i)
		}
		if len(w) > frameClasses[len(frameClasses)-1] && fb.class != -1 {
			t.Fatalf("frame %d of %d bytes pooled", i, len(w))
		}
		fb.release()
	}
}

func TestReadFramePooledLimits(t *testing.T) {
	_, err := readFramePooled(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 1<<30)), 1<<20)
	var fse *FrameSizeError
	if !errors.As(err, &fse) || fse.Size != 1<<30 {
		t.Fatalf("oversized frame: %v", err)
	}
	_, err = readFramePooled(bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, 10), 1, 2)), 1<<20)
	if err == nil || err.Error() != "unexpected EOF" {
		t.Fatalf("truncated frame: %v", err)
	}
}

func TestReleasesFrameOnlyForNonRetainingKeys(t *testing.T) {
	for key, want := range map[int16]bool{0: true, 1: true, 3: false, 11: false, 14: false, 36: false} {
		if releasesFrame(key) != want {
			t.Errorf("releasesFrame(%d) = %v", key, !want)
		}
	}
}

// Buffers of the mapped classes are reused with their pages while warm;
// trim keeps the free buffers of a class taken from after its cutoff and
// gives back the pages of the others, which are then reused, mapped still,
// reading as zeros.
func TestMappedFramesReusedAndTrimmed(t *testing.T) {
	var m mappedFrames
	class := firstMappedClass
	fb := m.get(class)
	if fb == nil {
		t.Skip("frame buffers are not mapped on this OS")
	}
	b := fb.b[:cap(fb.b)]
	for i := range b {
		b[i] = 0xab
	}
	first := &b[0]
	reget := func() []byte {
		t.Helper()
		m.put(fb)
		if fb = m.get(class); fb == nil || &fb.b[0] != first {
			t.Fatal("a released buffer was not reused")
		}
		return fb.b[:cap(fb.b)]
	}
	if b = reget(); b[0] != 0xab || b[len(b)-1] != 0xab {
		t.Fatal("a warm buffer lost its bytes")
	}
	// The free buffers of a class taken from after the cutoff keep their
	// pages, however long ago each was released.
	other := m.get(class)
	m.put(other)
	m.put(fb)
	m.trim(time.Now().Add(-time.Hour))
	if fb.cold || other.cold || m.warm != 2 {
		t.Fatal("free buffers of a class in use were trimmed")
	}
	if fb = m.get(class); fb.b[:cap(fb.b)][len(b)-1] != 0xab {
		t.Fatal("a warm buffer lost its bytes")
	}
	m.put(fb)
	m.trim(time.Now().Add(time.Second))
	if m.warm != 0 || !fb.cold || !other.cold {
		t.Fatalf("after trim: %d warm buffers, cold %v %v", m.warm, fb.cold, other.cold)
	}
	if fb = m.get(class); &fb.b[0] != first {
		t.Fatal("a trimmed buffer was not reused")
	}
	if b = fb.b[:cap(fb.b)]; !bytes.Equal(b, make([]byte, len(b))) {
		t.Fatal("a trimmed buffer kept its pages")
	}
	if m.mapped != 2*int64(frameClasses[class]) {
		t.Fatalf("%d bytes mapped for two buffers of %d", m.mapped, frameClasses[class])
	}
}

// mappedInUse is the bytes of the process's mapped frame buffers not free.
func mappedInUse() int64 {
	mapped.mu.Lock()
	defer mapped.mu.Unlock()
	n := mapped.mapped
	for i, free := range mapped.free {
		n -= int64(len(free) * frameClasses[i])
	}
	return n
}

// Every mapped frame the server reads goes back to the pool: a request that
// may keep references (Metadata) is answered from a heap copy, one whose
// handler fails (an unsupported Produce) closes the connection.
func TestServerReleasesMappedFrames(t *testing.T) {
	if fb := getFrameBuf(1 << 20); !fb.mapped {
		fb.release()
		t.Skip("frame buffers are not mapped on this OS")
	} else {
		fb.release()
	}
	_, addr, _ := startServer(t, &fakeDispatcher{}, Config{})
	c := dial(t, addr)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(4)
	for i := range 30000 {
		tp := kmsg.NewMetadataRequestTopic()
		tp.Topic = kmsg.StringPtr(strings.Repeat("t", 8) + strconv.Itoa(i))
		md.Topics = append(md.Topics, tp)
	}
	if n := len(frameRequest(md, 1)); n <= frameClasses[firstMappedClass-1] {
		t.Fatalf("metadata request of %d bytes is not in a mapped class", n)
	}
	c.send(md, 1)
	if corr, _, err := c.recv(0); err != nil || corr != 1 {
		t.Fatalf("metadata answer: %d %v", corr, err)
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.SetVersion(7)
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = make([]byte, 2<<20)
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	c.send(pr, 2)
	c.expectClosed()
	deadline := time.Now().Add(5 * time.Second)
	for mappedInUse() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of mapped frames never released", mappedInUse())
		}
		time.Sleep(time.Millisecond)
	}
}

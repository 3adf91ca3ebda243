package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
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

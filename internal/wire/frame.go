package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrFrameTooLarge is returned by ReadFrame for a frame whose announced size
// exceeds the limit (or is negative).
var ErrFrameTooLarge = errors.New("wire: frame exceeds socket.request.max.bytes")

// FrameSizeError carries the announced size of a rejected frame.
type FrameSizeError struct {
	Size, Max int32
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("wire: frame of %d bytes exceeds socket.request.max.bytes (%d)", e.Size, e.Max)
}

// Unwrap makes errors.Is(err, ErrFrameTooLarge) work.
func (e *FrameSizeError) Unwrap() error { return ErrFrameTooLarge }

// ReadFrame reads one size-prefixed frame from r. The 4-byte big-endian size
// is checked against max before the frame is allocated: a negative size or
// one above max yields a *FrameSizeError without reading further.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > max {
		return nil, &FrameSizeError{Size: n, Max: max}
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// Request frames are read into pooled buffers by size class, so that a busy
// producer connection does not allocate (and zero) a new multi-MiB buffer
// per request. Frames above the largest class are allocated as before.
var frameClasses = [...]int{4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20}

var framePools [len(frameClasses)]sync.Pool

// frameBuf is a pooled frame buffer; class is -1 for an unpooled one.
type frameBuf struct {
	b     []byte
	class int
}

func getFrameBuf(n int) *frameBuf {
	for i, size := range frameClasses {
		if n <= size {
			if fb, ok := framePools[i].Get().(*frameBuf); ok {
				fb.b = fb.b[:n]
				return fb
			}
			return &frameBuf{b: make([]byte, n, size), class: i}
		}
	}
	return &frameBuf{b: make([]byte, n), class: -1}
}

// release returns fb to its pool. The caller guarantees that nothing still
// refers to the bytes (see conn.dispatch: only after the handler returned,
// and only for keys whose decoded requests keep no reference).
func (fb *frameBuf) release() {
	if fb == nil || fb.class < 0 {
		return
	}
	framePools[fb.class].Put(fb)
}

// readFramePooled is ReadFrame into a pooled buffer.
func readFramePooled(r io.Reader, max int32) (*frameBuf, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > max {
		return nil, &FrameSizeError{Size: n, Max: max}
	}
	fb := getFrameBuf(int(n))
	if _, err := io.ReadFull(r, fb.b); err != nil {
		fb.release()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return fb, nil
}

// PooledFrame is a frame read into one of the request frame pools' buffers,
// for a client of another broker that reads many large responses (a replica
// fetcher): Bytes is valid until Release gives the buffer back.
type PooledFrame struct{ fb *frameBuf }

// ReadPooledFrame reads one size-prefixed frame of at most max bytes.
func ReadPooledFrame(r io.Reader, max int32) (PooledFrame, error) {
	fb, err := readFramePooled(r, max)
	return PooledFrame{fb}, err
}

// Bytes is the frame without its size prefix.
func (f PooledFrame) Bytes() []byte {
	if f.fb == nil {
		return nil
	}
	return f.fb.b
}

// Release gives the buffer back; nothing may use Bytes afterwards.
func (f PooledFrame) Release() { f.fb.release() }

package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
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
//
// Classes from 1 MiB up are mapped outside the Go heap where the OS allows
// (frame_mapped_linux.go). On the heap, pooled buffers count as live memory
// when the collector runs, so the heap was let grow to twice their size,
// and they stayed until collections emptied the pools (a quiet broker
// collects rarely). A mapped buffer costs resident memory only for the
// pages it holds, and the free buffers of a class nobody took one of for
// mappedIdle give their pages back to the OS (mappedFrames.trim).
var frameClasses = [...]int{4 << 10, 32 << 10, 256 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20}

// firstMappedClass is the first class mapped outside the heap.
const firstMappedClass = 3

var framePools [len(frameClasses)]sync.Pool

// frameBuf is a pooled frame buffer; class is -1 for an unpooled one.
type frameBuf struct {
	b      []byte
	class  int
	mapped bool // outside the Go heap: must be released, never dropped
	cold   bool // released and its pages given back
}

func getFrameBuf(n int) *frameBuf {
	for i, size := range frameClasses {
		if n > size {
			continue
		}
		if i >= firstMappedClass {
			if fb := mapped.get(i); fb != nil {
				mapped.start.Do(func() { go mapped.trimLoop() })
				fb.b = fb.b[:n]
				return fb
			}
		}
		if fb, ok := framePools[i].Get().(*frameBuf); ok {
			fb.b = fb.b[:n]
			return fb
		}
		return &frameBuf{b: make([]byte, n, size), class: i}
	}
	return &frameBuf{b: make([]byte, n), class: -1}
}

// release returns fb to its pool. The caller guarantees that nothing still
// refers to the bytes (see conn.dispatch: only after the handler returned,
// and only for keys whose decoded requests keep no reference).
func (fb *frameBuf) release() {
	switch {
	case fb == nil || fb.class < 0:
	case fb.mapped:
		mapped.put(fb)
	default:
		framePools[fb.class].Put(fb)
	}
}

// mappedIdle is how long a class's free buffers keep their pages after the
// class's last use. Trimming by class, not by buffer, keeps a busy class's
// whole working set: buffers at the bottom of its stack are seldom taken,
// but are when requests pile up, and giving back their pages meanwhile
// cost page faults and zeroing on each such peak.
const mappedIdle = 10 * time.Second

// mappedFrames are the released mapped buffers, by class, the most
// recently released last (its pages are the likeliest still resident).
type mappedFrames struct {
	mu      sync.Mutex
	free    [len(frameClasses)][]*frameBuf
	lastGet [len(frameClasses)]time.Time
	mapped  int64     // bytes mapped (all classes, in use or free)
	warm    int       // free buffers whose pages were not given back yet
	start   sync.Once // the trim loop (of the process's mappedFrames)
}

var mapped mappedFrames

// get takes a free buffer of class i, or maps a new one; nil where
// buffers cannot be mapped.
func (m *mappedFrames) get(i int) *frameBuf {
	now := time.Now()
	m.mu.Lock()
	m.lastGet[i] = now
	if free := m.free[i]; len(free) > 0 {
		fb := free[len(free)-1]
		m.free[i] = free[:len(free)-1]
		if !fb.cold {
			m.warm--
		}
		fb.cold = false
		m.mu.Unlock()
		return fb
	}
	m.mu.Unlock()
	b, ok := mapFrame(frameClasses[i])
	if !ok {
		return nil
	}
	m.mu.Lock()
	m.mapped += int64(len(b))
	m.mu.Unlock()
	return &frameBuf{b: b, class: i, mapped: true}
}

func (m *mappedFrames) put(fb *frameBuf) {
	m.mu.Lock()
	m.free[fb.class] = append(m.free[fb.class], fb)
	m.warm++
	m.mu.Unlock()
}

func (m *mappedFrames) trimLoop() {
	t := time.NewTicker(mappedIdle / 2)
	defer t.Stop()
	for now := range t.C {
		m.trim(now.Add(-mappedIdle))
	}
}

// trim gives back the pages of the free buffers of every class last taken
// from before cutoff.
func (m *mappedFrames) trim(cutoff time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.warm == 0 {
		return
	}
	for i, free := range m.free {
		if !m.lastGet[i].Before(cutoff) {
			continue
		}
		for _, fb := range free {
			if !fb.cold {
				dropFramePages(fb.b[:cap(fb.b)])
				fb.cold = true
				m.warm--
			}
		}
	}
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

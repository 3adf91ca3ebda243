package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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

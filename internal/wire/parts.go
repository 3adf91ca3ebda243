package wire

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// PartsResponse is a response that encodes itself as Parts: encoded bytes
// with file sections spliced in, so that large byte fields (Fetch record
// sets) go from the file to the socket without passing through user space.
// AppendParts must produce exactly the bytes AppendTo produces, with some
// of them given as file sections instead of copied.
type PartsResponse interface {
	kmsg.Response
	AppendParts(p *Parts)
}

// Parts is an encoded response frame: Buf holds every encoded byte except
// the file sections, which are spliced in at recorded offsets of Buf.
type Parts struct {
	// Buf holds the encoded bytes; append to it.
	Buf  []byte
	secs []splice
}

// splice is a file section sent before Buf[at:].
type splice struct {
	at       int
	file     io.ReaderAt
	pos, len int64
}

// AppendFile splices size bytes of f starting at pos after the bytes
// appended so far. With an *os.File and a TCP connection the section is sent
// with sendfile from that offset (the file's position is not used); other
// files are read with ReadAt and copied. A vfs.Pinner (a descriptor
// cache's file) is pinned for the length of its transfer; any other file
// must stay open until the response is written.
func (p *Parts) AppendFile(f io.ReaderAt, pos, size int64) {
	if size <= 0 {
		return
	}
	p.secs = append(p.secs, splice{at: len(p.Buf), file: f, pos: pos, len: size})
}

// Grow makes room for n more bytes in Buf.
func (p *Parts) Grow(n int) {
	if cap(p.Buf)-len(p.Buf) < n {
		nb := make([]byte, len(p.Buf), len(p.Buf)+n)
		copy(nb, p.Buf)
		p.Buf = nb
	}
}

// Size is the total number of bytes: Buf plus the file sections.
func (p *Parts) Size() int64 {
	n := int64(len(p.Buf))
	for _, s := range p.secs {
		n += s.len
	}
	return n
}

// Sections reports how many file sections are spliced in.
func (p *Parts) Sections() int { return len(p.secs) }

// Bytes returns every byte in order, reading the file sections (for tests
// and callers that need one slice).
func (p *Parts) Bytes() ([]byte, error) {
	return p.appendTo(make([]byte, 0, p.Size()))
}

// appendTo appends every byte of p in order to out, reading the file
// sections (a descriptor cache's file pinned for each read). out must have
// room for p.Size() more bytes.
func (p *Parts) appendTo(out []byte) ([]byte, error) {
	prev := 0
	for _, s := range p.secs {
		out = append(out, p.Buf[prev:s.at]...)
		prev = s.at
		n := len(out)
		out = out[:n+int(s.len)]
		if err := readSection(s, out[n:]); err != nil {
			return nil, err
		}
	}
	return append(out, p.Buf[prev:]...), nil
}

func readFull(f io.ReaderAt, b []byte, pos int64) error {
	n, err := f.ReadAt(b, pos)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// maxPooledResponse is the largest response buffer kept for reuse; bigger
// ones are left to the garbage collector so that one huge response does not
// pin memory.
const maxPooledResponse = 4 << 20

var partsPool = sync.Pool{New: func() any { return &Parts{Buf: make([]byte, 0, 1024)} }}

func getParts() *Parts { return partsPool.Get().(*Parts) }

// release returns p to the pool; p must not be used afterwards.
func (p *Parts) release() {
	if p == nil || cap(p.Buf) > maxPooledResponse {
		return
	}
	p.Buf = p.Buf[:0]
	clear(p.secs)
	p.secs = p.secs[:0]
	partsPool.Put(p)
}

// encodeResponse encodes resp's frame (size, response header, body) into a
// pooled Parts.
func encodeResponse(correlationID int32, resp kmsg.Response) *Parts {
	p := getParts()
	p.Buf = append(p.Buf, 0, 0, 0, 0)
	p.Buf = binary.BigEndian.AppendUint32(p.Buf, uint32(correlationID))
	if ResponseHeaderVersion(resp.Key(), resp.GetVersion()) == 1 {
		p.Buf = append(p.Buf, 0) // no tagged fields
	}
	if pr, ok := resp.(PartsResponse); ok {
		pr.AppendParts(p)
	} else {
		p.Buf = resp.AppendTo(p.Buf)
	}
	binary.BigEndian.PutUint32(p.Buf, uint32(p.Size()-4))
	return p
}

package wire

import (
	"net"
	"os"
	"sync"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// copyChunk is the buffer size for sections that cannot be sendfiled.
const copyChunk = 256 << 10

var copyPool = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}

// writeParts writes p to nc in order: the bytes between sections with
// write(2), each file section with sendfile(2) when nc is a TCP connection
// and the file an *os.File, else by reading and copying it. It returns the
// bytes written.
func writeParts(nc net.Conn, p *Parts) (int64, error) {
	if bp, frame, err := inlineParts(p); bp != nil || err != nil {
		if err != nil {
			return 0, err
		}
		defer copyPool.Put(bp)
		m, err := nc.Write(frame)
		return int64(m), err
	}
	var n int64
	prev := 0
	for _, s := range p.secs {
		if s.at > prev {
			m, err := nc.Write(p.Buf[prev:s.at])
			n += int64(m)
			if err != nil {
				return n, err
			}
			prev = s.at
		}
		m, err := writeSection(nc, s)
		n += m
		if err != nil {
			return n, err
		}
	}
	if prev < len(p.Buf) {
		m, err := nc.Write(p.Buf[prev:])
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// inlineSections is the largest average file section for writeParts to read
// a response's sections into one buffer with the rest of the frame (at most
// copyChunk in all) and send it with a single write(2). A small fetch then
// costs one pread per section and one write instead of a write and a
// sendfile per section, and leaves as one segment rather than one per part.
const inlineSections = 16 << 10

// inlineParts assembles the frame p in a buffer from copyPool when its file
// sections are small (inlineSections on average) and the whole frame fits, and returns
// the buffer (to put back once frame is written; its length stays
// copyChunk) and the frame in it. It returns a nil buffer when they are not.
func inlineParts(p *Parts) (_ *[]byte, frame []byte, _ error) {
	if len(p.secs) == 0 {
		return nil, nil, nil
	}
	total := int64(len(p.Buf))
	var files int64
	for _, s := range p.secs {
		files += s.len
	}
	if files > inlineSections*int64(len(p.secs)) || total+files > copyChunk {
		return nil, nil, nil
	}
	bp := copyPool.Get().(*[]byte)
	frame, err := p.appendTo((*bp)[:0])
	if err != nil {
		copyPool.Put(bp)
		return nil, nil, err
	}
	return bp, frame, nil
}

// pin holds the descriptor of a descriptor cache's file open (opening it
// again if it was evicted) and points s at it. It returns the file to Unpin
// when done with s, or nil for a file outside a cache.
func pin(s *splice) (vfs.Pinner, error) {
	p, ok := s.file.(vfs.Pinner)
	if !ok {
		return nil, nil
	}
	f, err := p.Pin()
	if err != nil {
		return nil, err
	}
	s.file = f
	return p, nil
}

// readSection reads the whole section s into dst, its file pinned.
func readSection(s splice, dst []byte) error {
	p, err := pin(&s)
	if err != nil {
		return err
	}
	if p != nil {
		defer p.Unpin()
	}
	return readFull(s.file, dst, s.pos)
}

func writeSection(nc net.Conn, s splice) (int64, error) {
	// Pinned for the length of the transfer.
	p, err := pin(&s)
	if err != nil {
		return 0, err
	}
	if p != nil {
		defer p.Unpin()
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		if f, ok := s.file.(*os.File); ok {
			if n, err, handled := sendFile(tc, f, s.pos, s.len); handled {
				return n, err
			}
		}
	}
	bp := copyPool.Get().(*[]byte)
	defer copyPool.Put(bp)
	buf := *bp
	var n int64
	for n < s.len {
		chunk := buf[:min(int64(len(buf)), s.len-n)]
		if err := readFull(s.file, chunk, s.pos+n); err != nil {
			return n, err
		}
		m, err := nc.Write(chunk)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

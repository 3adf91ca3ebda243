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
	buf := (*bp)[:0]
	prev := 0
	for _, s := range p.secs {
		buf = append(buf, p.Buf[prev:s.at]...)
		prev = s.at
		end := len(buf) + int(s.len)
		if err := readSection(s, buf[len(buf):end]); err != nil {
			copyPool.Put(bp)
			return nil, nil, err
		}
		buf = buf[:end]
	}
	return bp, append(buf, p.Buf[prev:]...), nil
}

// readSection reads the whole section s into dst, pinning a descriptor
// cache's file for the read.
func readSection(s splice, dst []byte) error {
	if p, ok := s.file.(vfs.Pinner); ok {
		f, err := p.Pin()
		if err != nil {
			return err
		}
		defer p.Unpin()
		s.file = f
	}
	return readFull(s.file, dst, s.pos)
}

func writeSection(nc net.Conn, s splice) (int64, error) {
	if p, ok := s.file.(vfs.Pinner); ok {
		// A descriptor cache's file: hold its descriptor open (opening it
		// again if it was evicted) for the length of the transfer.
		f, err := p.Pin()
		if err != nil {
			return 0, err
		}
		defer p.Unpin()
		s.file = f
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

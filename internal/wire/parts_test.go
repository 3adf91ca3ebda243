package wire

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// tempFileWith writes data to a new file in a test directory and opens it
// read-only.
func tempFileWith(t testing.TB, data []byte) *os.File {
	t.Helper()
	name := filepath.Join(t.TempDir(), "seg.log")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c2 := <-acc
	if c2 == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c1.Close(); c2.Close() })
	return c1.(*net.TCPConn), c2.(*net.TCPConn)
}

// memReaderAt is a non-OS file.
type memReaderAt struct{ b []byte }

func (m memReaderAt) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(m.b).ReadAt(p, off)
}

// randomParts builds Parts over file (bytes in data) and the bytes they
// stand for.
func randomParts(r *rand.Rand, file io.ReaderAt, data []byte) (*Parts, []byte) {
	return randomPartsUpTo(r, file, data, int64(len(data)))
}

// randomPartsUpTo is randomParts with sections of at most max bytes.
func randomPartsUpTo(r *rand.Rand, file io.ReaderAt, data []byte, max int64) (*Parts, []byte) {
	p := &Parts{}
	var want []byte
	for range r.IntN(6) + 1 {
		pre := make([]byte, r.IntN(40))
		for i := range pre {
			pre[i] = byte(r.Uint32())
		}
		p.Buf = append(p.Buf, pre...)
		want = append(want, pre...)
		pos := r.Int64N(int64(len(data)))
		size := r.Int64N(min(int64(len(data))-pos, max) + 1)
		p.AppendFile(file, pos, size)
		want = append(want, data[pos:pos+size]...)
	}
	p.Buf = append(p.Buf, "tail"...)
	return p, append(want, "tail"...)
}

func TestWritePartsSendfileAndCopy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	osf := tempFileWith(t, data)
	for _, tc := range []struct {
		name string
		file io.ReaderAt
		pipe bool
	}{
		{"os file over tcp (sendfile)", osf, false},
		{"mem file over tcp (copy)", memReaderAt{data}, false},
		{"os file over pipe (copy)", osf, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Large sections are sent section by section, small ones
			// (up to inlineSections each on average) read into one write.
			for i := range 10 {
				max := int64(len(data))
				if i%2 == 1 {
					max = inlineSections / 6
				}
				p, want := randomPartsUpTo(r, tc.file, data, max)
				var files int64
				for _, s := range p.secs {
					files += s.len
				}
				if bp, frame, err := inlineParts(p); err != nil || (bp != nil) != (files <= inlineSections*int64(len(p.secs)) && int64(len(p.Buf))+files <= copyChunk) {
					t.Fatalf("inlineParts with %d file bytes: inlined %v, %v", files, bp != nil, err)
				} else if bp != nil {
					if !bytes.Equal(frame, want) {
						t.Fatal("inlineParts assembled other bytes")
					}
					if len(*bp) != copyChunk {
						t.Fatalf("pooled buffer left at %d bytes, want %d", len(*bp), copyChunk)
					}
					copyPool.Put(bp)
				}
				if p.Size() != int64(len(want)) {
					t.Fatalf("Size %d, want %d", p.Size(), len(want))
				}
				if got, err := p.Bytes(); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("Bytes: err %v, equal %v", err, bytes.Equal(got, want))
				}
				var w, rd net.Conn
				if tc.pipe {
					w, rd = net.Pipe()
					defer w.Close()
					defer rd.Close()
				} else {
					w, rd = tcpPair(t)
				}
				got := make([]byte, len(want))
				errc := make(chan error, 1)
				go func() {
					_, err := io.ReadFull(rd, got)
					errc <- err
				}()
				n, err := writeParts(w, p)
				if err != nil || n != int64(len(want)) {
					t.Fatalf("writeParts: %d, %v (want %d)", n, err, len(want))
				}
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatal("received bytes differ")
				}
			}
			if pos, _ := osf.Seek(0, io.SeekCurrent); pos != 0 {
				t.Fatalf("file position moved to %d", pos)
			}
		})
	}
}

// TestSendfileConcurrentOffsets sends different sections of one file on
// several connections at once: each uses its own offset.
func TestSendfileConcurrentOffsets(t *testing.T) {
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	f := tempFileWith(t, data)
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		w, rd := tcpPair(t)
		pos, size := int64(i)*(1<<20)+int64(i), int64(2<<20)-int64(i)
		wg.Add(2)
		go func() {
			defer wg.Done()
			written, err, handled := sendFile(w, f, pos, size)
			if !handled || err != nil || written != size {
				errs <- errors.New("sendFile failed")
			}
		}()
		go func() {
			defer wg.Done()
			got := make([]byte, size)
			if _, err := io.ReadFull(rd, got); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, data[pos:pos+size]) {
				errs <- errors.New("wrong bytes")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSendfileSurvivesCloseMidTransfer closes the file while a transfer is
// blocked on a full socket: the descriptor stays valid until the transfer
// ends and every byte arrives.
func TestSendfileSurvivesCloseMidTransfer(t *testing.T) {
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(i ^ i>>9)
	}
	name := filepath.Join(t.TempDir(), "seg.log")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	w, rd := tcpPair(t)
	w.SetWriteBuffer(16 << 10)
	rd.SetReadBuffer(16 << 10)
	w.SetWriteDeadline(time.Now().Add(20 * time.Second))
	rd.SetReadDeadline(time.Now().Add(20 * time.Second))
	done := make(chan error, 1)
	go func() {
		n, err, _ := sendFile(w, f, 0, int64(len(data)))
		if err == nil && n != int64(len(data)) {
			err = io.ErrShortWrite
		}
		done <- err
	}()
	got := make([]byte, len(data))
	// The first bytes prove the transfer is under way; with small socket
	// buffers most of the 16 MiB is still in the file.
	if _, err := io.ReadFull(rd, got[:4096]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rd, got[4096:]); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("sendFile: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("received bytes differ")
	}
}

func TestSendfileClosedOrShortFile(t *testing.T) {
	f := tempFileWith(t, []byte("0123456789"))
	w, _ := tcpPair(t)
	if _, err, _ := sendFile(w, f, 5, 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("section past the end: %v", err)
	}
	f.Close()
	if _, err := writeParts(w, &Parts{secs: []splice{{file: f, pos: 0, len: 4}}}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("closed file: %v", err)
	}
}

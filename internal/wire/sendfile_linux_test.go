package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// stalledTransfer starts sendFile of 16 MiB to a reader with small socket
// buffers and returns the reader, once the first bytes have arrived, and
// the channel sendFile's error arrives on.
func stalledTransfer(t *testing.T, deadline time.Duration) (*net.TCPConn, *net.TCPConn, <-chan error) {
	t.Helper()
	f := tempFileWith(t, make([]byte, 16<<20))
	w, rd := tcpPair(t)
	w.SetWriteBuffer(16 << 10)
	rd.SetReadBuffer(16 << 10)
	if deadline > 0 {
		w.SetWriteDeadline(time.Now().Add(deadline))
	}
	done := make(chan error, 1)
	go func() {
		_, err, _ := sendFile(w, f, 0, 16<<20)
		done <- err
	}()
	rd.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(rd, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	return w, rd, done
}

// TestSendfileStalledReaderHitsWriteDeadline: a client that stops reading
// leaves the transfer waiting, first in poll(2) and then on the runtime
// poller; the write deadline still ends it.
func TestSendfileStalledReaderHitsWriteDeadline(t *testing.T) {
	_, _, done := stalledTransfer(t, 300*time.Millisecond)
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("sendFile = %v, want the write deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sendFile still waiting 10 s after a 300 ms write deadline")
	}
}

// TestSendfileSlowReaderHitsWriteDeadline: a client that reads slowly but
// steadily makes the socket writable again and again, so each wait in poll(2)
// succeeds; the time spent in them still adds up, and the write deadline ends
// the transfer long before the 16 MiB are through.
func TestSendfileSlowReaderHitsWriteDeadline(t *testing.T) {
	f := tempFileWith(t, make([]byte, 16<<20))
	w, rd := tcpPair(t)
	w.SetWriteBuffer(16 << 10)
	rd.SetReadBuffer(16 << 10)
	w.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err, _ := sendFile(w, f, 0, 16<<20)
		done <- err
	}()
	buf := make([]byte, 4096)
	for {
		select {
		case err := <-done:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("sendFile = %v, want the write deadline", err)
			}
			return
		case <-time.After(time.Millisecond): // the client's pace: 4 KiB a millisecond at most
		}
		rd.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := rd.Read(buf); err != nil {
			t.Fatalf("client read: %v", err)
		}
	}
}

// TestSendfileStalledReaderConnectionClosed: closing the connection ends a
// transfer that waits for a client that stopped reading.
func TestSendfileStalledReaderConnectionClosed(t *testing.T) {
	w, _, done := stalledTransfer(t, 0)
	w.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("sendFile = %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sendFile still waiting 10 s after the connection was closed")
	}
}

// TestSendfileDirectWaitersBounded runs three times as many transfers as may
// wait in poll(2) at once, to readers that take small pieces: every byte
// arrives, the transfers did wait in poll(2), and never more of them at once
// than maxDirectWaiters.
func TestSendfileDirectWaitersBounded(t *testing.T) {
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 13 / 7)
	}
	f := tempFileWith(t, data)
	before := directWaits.Load()
	n := 3 * int(maxDirectWaiters)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	stop := make(chan struct{})
	peak := make(chan int32, 1)
	go func() {
		var most int32
		for {
			select {
			case <-stop:
				peak <- most
				return
			default:
				most = max(most, directWaiters.Load())
			}
		}
	}()
	for range n {
		w, rd := tcpPair(t)
		w.SetWriteBuffer(16 << 10)
		rd.SetReadBuffer(16 << 10)
		w.SetWriteDeadline(time.Now().Add(30 * time.Second))
		rd.SetReadDeadline(time.Now().Add(30 * time.Second))
		wg.Add(2)
		go func() {
			defer wg.Done()
			if written, err, _ := sendFile(w, f, 0, int64(len(data))); err != nil || written != int64(len(data)) {
				errs <- errors.New("sendFile failed")
			}
		}()
		go func() {
			defer wg.Done()
			var got bytes.Buffer
			buf := make([]byte, 1024)
			for got.Len() < len(data) {
				k, err := rd.Read(buf)
				got.Write(buf[:k])
				if err != nil {
					errs <- err
					return
				}
			}
			if !bytes.Equal(got.Bytes(), data) {
				errs <- errors.New("wrong bytes")
			}
		}()
	}
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if most := <-peak; most > maxDirectWaiters {
		t.Errorf("%d transfers waited in poll(2) at once, limit %d", most, maxDirectWaiters)
	}
	if directWaits.Load() == before {
		t.Error("no transfer waited in poll(2)")
	}
	if now := directWaiters.Load(); now != 0 {
		t.Errorf("%d waiters counted after every transfer ended", now)
	}
}

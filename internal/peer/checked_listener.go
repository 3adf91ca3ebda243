package peer

import (
	"errors"
	"net"
	"sync"
	"time"
)

// CheckedListener returns a listener whose Accept yields only the
// connections that check accepts; a refused one is passed to refused (which
// may be nil) and closed. Checks run concurrently, one goroutine per
// connection, so a slow or silent peer holds up nobody else.
func CheckedListener(ln net.Listener, check func(net.Conn) error, refused func(net.Conn, error)) net.Listener {
	l := &checkedListener{Listener: ln, check: check, refused: refused, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

type checkedListener struct {
	net.Listener
	check   func(net.Conn) error
	refused func(net.Conn, error)
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	err     error // why Accept fails: set once, before done is closed
}

func (l *checkedListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			l.once.Do(func() { l.err = err; close(l.done) })
			return
		}
		go func() {
			if err := l.check(c); err != nil {
				if l.refused != nil {
					l.refused(c, err)
				}
				c.Close()
				return
			}
			select {
			case l.conns <- c:
			case <-l.done:
				c.Close()
			}
		}()
	}
}

func (l *checkedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

func (l *checkedListener) Close() error {
	err := l.Listener.Close()
	// Accept then fails with net.ErrClosed: never (nil, nil), on which an
	// http.Server would serve a nil connection.
	l.once.Do(func() { l.err = net.ErrClosed; close(l.done) })
	return err
}

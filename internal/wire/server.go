package wire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default.
const DefaultMaxRequestBytes = 104857600

// DefaultMaxInFlight bounds the requests read but not yet answered per
// connection; the reader stops reading (TCP back-pressure) when it is reached.
const DefaultMaxInFlight = 32

// Config tunes a Server. Zero values get defaults.
type Config struct {
	// MaxRequestBytes is socket.request.max.bytes.
	MaxRequestBytes int32
	// IdleTimeout is connections.max.idle.ms; 0 disables it.
	IdleTimeout time.Duration
	// SendBufferBytes is socket.send.buffer.bytes: the SO_SNDBUF of every
	// accepted connection; 0 or less leaves the OS default (see sockopt.go).
	SendBufferBytes int
	// MaxInFlight is the per-connection pipelining bound.
	MaxInFlight int
	Logger      *slog.Logger
	Observer    Observer
	// Admit, when set, decides about every accepted connection before it
	// is served (connection limits, admit.go).
	Admit func(ctx context.Context, l *Listener, remote net.Addr) Admission
}

// Server accepts connections on one or more listeners and serves them with a
// Dispatcher.
type Server struct {
	cfg  Config
	d    Dispatcher
	log  *slog.Logger
	obs  Observer
	base context.Context
	stop context.CancelFunc

	mu        sync.Mutex
	closing   bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	wg        sync.WaitGroup
}

// NewServer returns a Server dispatching to d.
func NewServer(d Dispatcher, cfg Config) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	base, stop := context.WithCancel(context.Background())
	return &Server{
		cfg: cfg, d: d, log: cfg.Logger, obs: cfg.Observer, base: base, stop: stop,
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
	}
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("wire: server closed")

// Serve accepts connections on l until Shutdown as a PLAINTEXT listener named
// PLAINTEXT; it returns ErrServerClosed then, or the accept error that
// stopped it.
func (s *Server) Serve(l net.Listener) error {
	return s.ServeListener(l, &Listener{Name: ProtocolPlaintext, Protocol: ProtocolPlaintext})
}

// ServeListener is Serve with the listener's security settings: every
// connection accepted on l is secured as ls says. ls must not change
// afterwards.
func (s *Server) ServeListener(l net.Listener, ls *Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	backoff := 5 * time.Millisecond
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.log.Warn("accept failed, retrying", "listener", l.Addr().String(), "err", err)
				time.Sleep(backoff)
				backoff = min(backoff*2, time.Second)
				continue
			}
			s.log.Error("accept failed, listener stopped", "listener", l.Addr().String(), "err", err)
			return err
		}
		backoff = 5 * time.Millisecond
		s.setSocketOptions(nc)
		adm, ok := s.admit(s.base, nc, ls)
		if !ok {
			continue
		}
		c := newConn(s, nc, ls)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			if adm.Release != nil {
				adm.Release()
			}
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			if adm.Release != nil {
				defer adm.Release()
			}
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Shutdown stops accepting, stops reading new requests, lets requests already
// read finish and their responses be written, then closes every connection.
// Handler contexts are cancelled so long-polls return early. If ctx expires
// first, remaining connections are closed forcibly and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.beginClose()
	}
	s.mu.Unlock()
	s.stop()

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.hardClose()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

// NumConns returns the number of open connections.
func (s *Server) NumConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Package console is Sluice's built-in web console: an HTTP server with
// server-rendered pages (html/template, embedded assets, no CDN) over a
// Kafka client of the broker's own listener (franz-go kgo/kadm), so that it
// shows what any client sees, works against a cluster and, with a SASL
// listener, acts as the principal who logged in.
//
// Security model (docs/console.md): with SASL the console asks for a user
// name and password and opens a Kafka connection as that user; without it
// the console is read-only unless Options.AllowWrites. Sessions are random
// ids in an HttpOnly, SameSite=Strict cookie; every POST carries the
// session's CSRF token, and its Origin (or Referer) must be the console
// itself; the Host header must name the console (localhost, an IP address,
// the listen host or one of Options.AllowedHosts), against DNS rebinding.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Options configure a Console.
type Options struct {
	// Listen is the console's host:port.
	Listen string
	// Listener, when set, is Listen already bound (the broker binds it
	// before it creates anything, so that a busy address stops it early);
	// Start serves on it.
	Listener net.Listener
	// Bootstrap are the Kafka addresses the console connects to.
	Bootstrap []string
	// TLS, when set, is the client TLS set-up for Bootstrap.
	TLS *tls.Config
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 when the
	// listener authenticates: the console then requires a login.
	SASLMechanism string
	// SASLMechanisms, when it has more than one, lets the login form
	// choose among them (SASLMechanism is the default).
	SASLMechanisms []string
	// AllowWrites enables the actions without a login (no SASL).
	AllowWrites bool
	// AllowedHosts are host names accepted in the Host header besides
	// localhost, IP addresses and Listen's host.
	AllowedHosts []string
	// LagInterval is how often consumer lag is sampled (default 5s);
	// LagWindow how much history the lag chart keeps (default 15m).
	LagInterval, LagWindow time.Duration
	// Traffic, when set, is the broker's per-topic counters (traffic.go),
	// sampled every LagInterval for the topics pages.
	Traffic *Traffic
	// RequestTimeout bounds each page's Kafka requests (default 10s).
	RequestTimeout time.Duration
	// SessionIdle expires sessions unused for this long (default 1h).
	SessionIdle time.Duration
	Logger      *slog.Logger
}

// Console serves the web console.
type Console struct {
	opts  Options
	log   *slog.Logger
	pages *pageSet

	mu       sync.Mutex
	sessions map[string]*session
	anon     *principal             // the shared client without SASL
	failures map[string][]time.Time // failed logins per client address, the last minute's

	scans chan struct{} // a slot per running record scan (data.go)
	// trafficHist samples opts.Traffic (nil without it; traffic.go).
	trafficHist *trafficHistory
	srv         *http.Server
	ln          net.Listener
	stop        chan struct{}
	stopped     sync.WaitGroup
}

// principal is a Kafka client acting as one user, with its lag history.
type principal struct {
	user string
	opts []kgo.Opt
	cl   *kgo.Client
	adm  *kadm.Client
	lag  *lagHistory
	refs int
}

// session is one browser's: a CSRF token and, once logged in (or without
// SASL), the principal it acts as.
type session struct {
	id       string
	csrf     string
	p        *principal
	lastUsed time.Time
}

const (
	cookieName  = "sluice_console"
	maxSessions = 10000
)

// New checks opts and returns a console; Start binds it, or use Handler.
func New(opts Options) (*Console, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LagInterval <= 0 {
		opts.LagInterval = 5 * time.Second
	}
	if opts.LagWindow <= 0 {
		opts.LagWindow = 15 * time.Minute
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 10 * time.Second
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = time.Hour
	}
	if len(opts.Bootstrap) == 0 {
		return nil, errors.New("console: no Kafka bootstrap address")
	}
	opts.SASLMechanism = strings.ToUpper(opts.SASLMechanism)
	if opts.SASLMechanism != "" && !slices.Contains(opts.SASLMechanisms, opts.SASLMechanism) {
		opts.SASLMechanisms = append([]string{opts.SASLMechanism}, opts.SASLMechanisms...)
	}
	for i, m := range opts.SASLMechanisms {
		opts.SASLMechanisms[i] = strings.ToUpper(m)
		if !supportedMechanism(opts.SASLMechanisms[i]) {
			return nil, fmt.Errorf("console: SASL mechanism %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", m)
		}
	}
	if opts.SASLMechanism == "" && len(opts.SASLMechanisms) > 0 {
		opts.SASLMechanism = opts.SASLMechanisms[0]
	}
	pages, err := loadPages()
	if err != nil {
		return nil, err
	}
	c := &Console{opts: opts, log: opts.Logger, pages: pages, sessions: map[string]*session{}, failures: map[string][]time.Time{}, stop: make(chan struct{}), scans: make(chan struct{}, maxScans)}
	if opts.Traffic != nil && opts.Traffic.Totals != nil {
		c.trafficHist = newTrafficHistory()
	}
	if opts.SASLMechanism == "" {
		p, err := c.newPrincipal("", "", "")
		if err != nil {
			return nil, err
		}
		c.anon = p
		c.anon.refs = 1
	}
	c.stopped.Add(1)
	go c.sampleLoop()
	return c, nil
}

// Start binds Listen and serves until Close.
func (c *Console) Start() error {
	ln := c.opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", c.opts.Listen); err != nil {
			return fmt.Errorf("console: listen %s: %w", c.opts.Listen, err)
		}
	}
	c.ln = ln
	c.srv = &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("console stopped", "err", err)
		}
	}()
	c.log.Info("web console listening", "addr", "http://"+ln.Addr().String(), "login", c.opts.SASLMechanism != "", "writes", c.writesWithoutLogin())
	return nil
}

// Addr is the bound address (nil before Start).
func (c *Console) Addr() net.Addr {
	if c.ln == nil {
		return nil
	}
	return c.ln.Addr()
}

// Close stops the server, the lag sampler and every Kafka client.
func (c *Console) Close() error {
	var err error
	if c.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = c.srv.Shutdown(ctx)
		cancel()
	}
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.stopped.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.sessions {
		c.releaseLocked(s)
		delete(c.sessions, id)
	}
	if c.anon != nil {
		c.anon.cl.Close()
		c.anon = nil
	}
	return err
}

func (c *Console) writesWithoutLogin() bool { return c.opts.SASLMechanism == "" && c.opts.AllowWrites }

// canWrite reports whether the session may use the actions.
func (c *Console) canWrite(s *session) bool {
	if c.opts.SASLMechanism != "" {
		return s != nil && s.p != nil
	}
	return c.opts.AllowWrites
}

func supportedMechanism(m string) bool {
	return m == "PLAIN" || m == "SCRAM-SHA-256" || m == "SCRAM-SHA-512"
}

// clientOpts are the kgo options for user with mechanism mech (no SASL
// when mech is "").
func (c *Console) clientOpts(mech, user, pass string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.opts.Bootstrap...),
		kgo.ClientID("sluice-console"),
		kgo.RetryTimeout(c.opts.RequestTimeout),
		kgo.MetadataMinAge(time.Second),
	}
	if c.opts.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.opts.TLS.Clone()))
	}
	switch mech {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	}
	return opts
}

func (c *Console) newPrincipal(mech, user, pass string) (*principal, error) {
	opts := c.clientOpts(mech, user, pass)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("console: kafka client: %w", err)
	}
	return &principal{user: user, opts: opts, cl: cl, adm: kadm.NewClient(cl), lag: newLagHistory(c.opts.LagWindow)}, nil
}

// login opens a client as user and checks the credentials with a request.
func (c *Console) login(ctx context.Context, mech, user, pass string) (*principal, error) {
	if !slices.Contains(c.opts.SASLMechanisms, mech) {
		return nil, fmt.Errorf("SASL mechanism %q is not enabled on the listener (%s)", mech, strings.Join(c.opts.SASLMechanisms, ", "))
	}
	p, err := c.newPrincipal(mech, user, pass)
	if err != nil {
		return nil, err
	}
	if _, err := p.adm.BrokerMetadata(ctx); err != nil {
		p.cl.Close()
		return nil, err
	}
	return p, nil
}

func randomID() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// session returns the request's session, creating one (and its cookie) if
// there is none or it expired.
func (c *Console) session(w http.ResponseWriter, r *http.Request) *session {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if ck, err := r.Cookie(cookieName); err == nil {
		if s, ok := c.sessions[ck.Value]; ok {
			if now.Sub(s.lastUsed) < c.opts.SessionIdle {
				s.lastUsed = now
				return s
			}
			c.releaseLocked(s)
			delete(c.sessions, s.id)
		}
	}
	s := &session{id: randomID(), csrf: randomID(), lastUsed: now}
	if c.anon != nil {
		s.p = c.anon
	}
	c.addLocked(s)
	c.setCookie(w, r, s.id)
	return s
}

func (c *Console) addLocked(s *session) {
	if len(c.sessions) >= maxSessions {
		c.expireLocked(time.Now())
		for len(c.sessions) >= maxSessions {
			// Drop the least recently used session, one without a login
			// first, so that a flood of new visitors cannot log users out.
			var old *session
			for _, o := range c.sessions {
				if old == nil || loggedIn(old) && !loggedIn(o) || loggedIn(old) == loggedIn(o) && o.lastUsed.Before(old.lastUsed) {
					old = o
				}
			}
			c.releaseLocked(old)
			delete(c.sessions, old.id)
		}
	}
	c.sessions[s.id] = s
}

func loggedIn(s *session) bool { return s.p != nil && s.p.user != "" }

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		// Behind a proxy that terminates TLS, the proxy says so.
		Secure: r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"),
	})
}

// releaseLocked drops s's hold on its principal (the anonymous one is
// shared and stays).
func (c *Console) releaseLocked(s *session) {
	if s.p == nil || s.p == c.anon {
		return
	}
	s.p.refs--
	if s.p.refs <= 0 {
		s.p.cl.Close()
	}
	s.p = nil
}

func (c *Console) expireLocked(now time.Time) {
	for id, s := range c.sessions {
		if now.Sub(s.lastUsed) >= c.opts.SessionIdle {
			c.releaseLocked(s)
			delete(c.sessions, id)
		}
	}
}

// startSession replaces s by a fresh logged-in session for p (a new id, so
// that an id known before the login is worthless after it).
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, old *session, p *principal) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old != nil {
		c.releaseLocked(old)
		delete(c.sessions, old.id)
	}
	p.refs++
	s := &session{id: randomID(), csrf: randomID(), p: p, lastUsed: time.Now()}
	c.addLocked(s)
	c.setCookie(w, r, s.id)
	return s
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.mu.Lock()
	c.releaseLocked(s)
	delete(c.sessions, s.id)
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// hostAllowed checks the Host header against DNS rebinding: localhost, an
// IP address, the listen host or an allowed name.
func (c *Console) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil {
		return true
	}
	if lh, _, err := net.SplitHostPort(c.opts.Listen); err == nil && lh != "" && strings.EqualFold(lh, host) {
		return true
	}
	for _, a := range c.opts.AllowedHosts {
		if strings.EqualFold(strings.TrimSpace(a), host) {
			return true
		}
	}
	return false
}

// sameOrigin checks a state-changing request's Origin (else Referer)
// against its Host; a request with neither is refused unless the browser
// says it is same-origin.
func sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Errorf("cross-site request (Sec-Fetch-Site: %s)", site)
	}
	src := r.Header.Get("Origin")
	if src == "" || src == "null" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return errors.New("request without Origin or Referer")
	}
	u, err := url.Parse(src)
	if err != nil || u.Host == "" {
		return fmt.Errorf("bad Origin %q", src)
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return fmt.Errorf("Origin %s is not this console (%s)", u.Host, r.Host)
	}
	return nil
}

func (s *session) csrfOK(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) == 1
}

// sampleLoop samples the lag of every principal's groups and expires idle
// sessions.
func (c *Console) sampleLoop() {
	defer c.stopped.Done()
	t := time.NewTicker(c.opts.LagInterval)
	defer t.Stop()
	c.sampleAll()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.sampleAll()
		}
	}
}

func (c *Console) sampleAll() {
	c.sampleTraffic() // traffic.go
	c.mu.Lock()
	c.expireLocked(time.Now())
	seen := map[*principal]bool{}
	var ps []*principal
	if c.anon != nil {
		ps = append(ps, c.anon)
		seen[c.anon] = true
	}
	for _, s := range c.sessions {
		if s.p != nil && !seen[s.p] {
			seen[s.p] = true
			s.p.refs++ // held while sampling
			ps = append(ps, s.p)
		}
	}
	c.mu.Unlock()
	for _, p := range ps {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.RequestTimeout)
		p.lag.sample(ctx, p.adm, time.Now())
		cancel()
	}
	c.mu.Lock()
	for _, p := range ps {
		if p == c.anon {
			continue
		}
		p.refs--
		if p.refs <= 0 {
			p.cl.Close()
		}
	}
	c.mu.Unlock()
}

// Failed logins: an address with loginFailures of them in the last
// loginWindow gets no further attempt until the oldest is a minute old.
const (
	loginFailures = 10
	loginWindow   = time.Minute
)

func clientAddr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// loginBlocked reports whether addr has used up its failed logins.
func (c *Console) loginBlocked(addr string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.recentFailuresLocked(addr, now)) >= loginFailures
}

func (c *Console) loginFailed(addr string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failures) >= maxSessions { // forget the oldest addresses' counts
		for a := range c.failures {
			c.recentFailuresLocked(a, now)
		}
	}
	c.failures[addr] = append(c.recentFailuresLocked(addr, now), now)
}

func (c *Console) recentFailuresLocked(addr string, now time.Time) []time.Time {
	fs := c.failures[addr]
	i := 0
	for i < len(fs) && now.Sub(fs[i]) >= loginWindow {
		i++
	}
	fs = fs[i:]
	if len(fs) == 0 {
		delete(c.failures, addr)
		return nil
	}
	c.failures[addr] = fs
	return fs
}

// Connection limits, as Apache Kafka's ConnectionQuotas:
//
//   - max.connections (broker-wide) and listener.name.<l>.max.connections
//     (one listener): when reached, the listener stops accepting until a
//     connection closes (the client waits in the backlog). The
//     inter-broker listener is never held by the broker-wide limit.
//   - max.connections.per.ip and max.connections.per.ip.overrides
//     (host:count,ip:count): a connection above its address's limit is
//     closed at once.
//   - max.connection.creation.rate (broker-wide) and
//     listener.name.<l>.max.connection.creation.rate: measured over the
//     quota windows; above it the listener waits out the throttle time
//     before serving the connection and accepting the next.
//   - the connection_creation_rate quota of an ip entity (or the ip
//     default), set with AlterClientQuotas: a connection above it is closed
//     after its throttle time.
//
// Limits are read at start-up; max.connections and max.connections.per.ip
// can also be changed dynamically (dynamic_configs.go: setLimits), the
// others need a restart (Kafka can change them dynamically).

package broker

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-broker/sluice/internal/quota"
	"github.com/sluice-broker/sluice/internal/wire"
)

type connLimits struct {
	b      *Broker
	window quota.Window
	now    func() time.Time

	maxTotal      int
	listenerMax   map[string]int // lower-case listener name → max.connections
	interBroker   string         // lower case; exempt from maxTotal
	perIP         int
	overrides     map[string]int // ip → limit
	rateTotal     float64
	listenerRates map[string]float64

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced when a connection ends
	total       int
	perListener map[string]int
	byIP        map[string]int
	rates       map[string]*quota.Rate // "" broker-wide, "l:<name>" per listener, "ip:<addr>"
}

// parseConnLimits reads the connection-limit configs.
func (b *Broker) parseConnLimits() (*connLimits, error) {
	raw := b.cfg.Raw
	l := &connLimits{b: b, window: b.quotas.mgr.Window(), now: time.Now,
		maxTotal: math.MaxInt32, perIP: math.MaxInt32, rateTotal: math.MaxInt32,
		listenerMax: map[string]int{}, overrides: map[string]int{}, listenerRates: map[string]float64{},
		changed: make(chan struct{}), perListener: map[string]int{}, byIP: map[string]int{}, rates: map[string]*quota.Rate{}}
	num := func(name string) (int, bool, error) {
		v, ok := b.conf().Explicit(name) // max.connections(.per.ip) may be dynamic (dynamic_configs.go)
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("sluice: %s=%q: want a non-negative integer", name, v)
		}
		return n, true, nil
	}
	var err error
	var ok bool
	var n int
	if n, ok, err = num("max.connections"); err != nil {
		return nil, err
	} else if ok {
		l.maxTotal = n
	}
	if n, ok, err = num("max.connections.per.ip"); err != nil {
		return nil, err
	} else if ok {
		l.perIP = n
	}
	if n, ok, err = num("max.connection.creation.rate"); err != nil {
		return nil, err
	} else if ok {
		l.rateTotal = float64(n)
	}
	for name := range raw {
		lname, rest, ok := strings.Cut(strings.TrimPrefix(name, "listener.name."), ".")
		if !strings.HasPrefix(name, "listener.name.") || !ok {
			continue
		}
		switch rest {
		case "max.connections":
			if n, _, err = num(name); err != nil {
				return nil, err
			}
			l.listenerMax[strings.ToLower(lname)] = n
		case "max.connection.creation.rate":
			if n, _, err = num(name); err != nil {
				return nil, err
			}
			l.listenerRates[strings.ToLower(lname)] = float64(n)
		}
	}
	if v := strings.TrimSpace(raw["max.connections.per.ip.overrides"]); v != "" {
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			i := strings.LastIndex(e, ":")
			n, err := strconv.Atoi(strings.TrimSpace(e[i+1:]))
			if i <= 0 || err != nil || n < 0 {
				return nil, fmt.Errorf("sluice: max.connections.per.ip.overrides: %q is not host:count", e)
			}
			host := strings.Trim(strings.TrimSpace(e[:i]), "[]")
			addrs := []string{host}
			if net.ParseIP(host) == nil {
				if addrs, err = net.LookupHost(host); err != nil {
					return nil, fmt.Errorf("sluice: max.connections.per.ip.overrides: %s: %v", host, err)
				}
			}
			for _, a := range addrs {
				if ip := net.ParseIP(a); ip != nil {
					l.overrides[ip.String()] = n
				}
			}
		}
	}
	if v := strings.TrimSpace(raw["inter.broker.listener.name"]); v != "" {
		l.interBroker = strings.ToLower(v)
	} else if v := strings.TrimSpace(raw["security.inter.broker.protocol"]); v != "" {
		l.interBroker = strings.ToLower(v) // the listener of that name (interbroker.go)
	}
	b.dyn.conns.Store(l)
	// A dynamic change published meanwhile (cluster node) is not missed.
	l.setLimits(intConfig(b.conf(), "max.connections"), intConfig(b.conf(), "max.connections.per.ip"))
	return l, nil
}

func remoteIP(a net.Addr) string {
	host := a.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// throttleLocked records a connection on the rate named key and returns
// its throttle time at limit (zero when under it).
func (l *connLimits) throttleLocked(key string, limit float64, now time.Time) time.Duration {
	if limit >= math.MaxInt32 {
		return 0
	}
	r, ok := l.rates[key]
	if !ok {
		r = quota.NewRate(l.window)
		l.rates[key] = r
	}
	r.Record(1, now)
	return r.Throttle(limit, now)
}

// admit is wire.Config.Admit.
func (l *connLimits) admit(ctx context.Context, ls *wire.Listener, remote net.Addr) wire.Admission {
	ip := remoteIP(remote)
	lname := strings.ToLower(ls.Name)
	now := l.now()

	// The ip's connection_creation_rate quota: close it after the throttle.
	if rate, ok := l.b.quotaIndex().ResolveIP(ip); ok {
		l.mu.Lock()
		d := l.throttleLocked("ip:"+ip, rate, now)
		l.mu.Unlock()
		if d > 0 {
			l.b.logger.Info("connection closed: connection_creation_rate quota of the ip exceeded",
				"ip", ip, "listener", ls.Name, "throttle_ms", d.Milliseconds())
			return wire.Admission{CloseAfter: d}
		}
	}

	l.mu.Lock()
	limit := l.perIP
	if n, ok := l.overrides[ip]; ok {
		limit = n
	}
	if l.byIP[ip] >= limit {
		l.mu.Unlock()
		l.b.logger.Info("connection closed: max.connections.per.ip reached", "ip", ip, "limit", limit, "listener", ls.Name)
		return wire.Admission{}
	}
	// Connection creation rate: wait out the throttle, broker-wide and
	// for the listener.
	d := l.throttleLocked("", l.rateTotal, now)
	if r, ok := l.listenerRates[lname]; ok {
		d = max(d, l.throttleLocked("l:"+lname, r, now))
	}
	l.mu.Unlock()
	if d > 0 {
		l.b.logger.Debug("connection creation rate exceeded: accept delayed", "listener", ls.Name, "delay_ms", d.Milliseconds())
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return wire.Admission{}
		}
	}
	// A free slot, broker-wide and on the listener: wait for one.
	for {
		l.mu.Lock()
		lmax, hasL := l.listenerMax[lname]
		full := (l.total >= l.maxTotal && lname != l.interBroker) || (hasL && l.perListener[lname] >= lmax)
		if !full {
			if l.byIP[ip] >= limit { // taken while waiting
				l.mu.Unlock()
				return wire.Admission{}
			}
			l.total++
			l.perListener[lname]++
			l.byIP[ip]++
			l.mu.Unlock()
			return wire.Admission{OK: true, Release: func() { l.release(lname, ip) }}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return wire.Admission{}
		}
	}
}

func (l *connLimits) release(lname, ip string) {
	l.mu.Lock()
	l.total--
	l.perListener[lname]--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// setLimits applies new max.connections and max.connections.per.ip values
// (dynamic broker configs) to connections accepted from now on; listeners
// waiting for a free slot look again.
func (l *connLimits) setLimits(maxTotal, perIP int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxTotal == maxTotal && l.perIP == perIP {
		return
	}
	l.maxTotal, l.perIP = maxTotal, perIP
	close(l.changed)
	l.changed = make(chan struct{})
}

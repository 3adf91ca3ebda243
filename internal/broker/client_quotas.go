// Client quotas: where they are stored and how the broker enforces them.
//
// The quotas (AlterClientQuotas, alter_client_quotas.go) live in the
// cluster metadata on a cluster node (SetClientQuotas records decided by
// the controller; every broker reads them from its image) and in the data
// directory's client-quotas.json on a single node (replaced atomically
// through vfs). Each request's client is resolved through Kafka's eight
// levels (internal/quota) from its principal's name (ANONYMOUS without
// authentication) and its client id.
//
// Enforcement follows KIP-219: the usage is recorded (produced bytes,
// fetched bytes, request handling time, partitions created or deleted), the
// throttle time Kafka would compute is put in the response's
// throttle_time_ms, and the connection reads no further request for that
// long (wire.ConnState.Throttle).

package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/quota"
	"github.com/sluice-broker/sluice/internal/vfs"
	"github.com/sluice-broker/sluice/internal/wire"
)

// quotasFile is the single node's quota file in the data directory.
const quotasFile = "client-quotas.json"

const quotasFileVersion = 1

type quotasDoc struct {
	Version int          `json:"version"`
	Quotas  quota.Quotas `json:"quotas"`
}

// quotaState is the broker's quota side.
type quotaState struct {
	mgr *quota.Manager

	mu    sync.Mutex                   // serialises single-node alterations
	local atomic.Pointer[quota.Quotas] // the single node's quotas
	path  string
	index atomic.Pointer[quotaIndexCache] // quotaIndex

	// publishedACLs are the image ACLs the authorizer holds on a cluster
	// node (cluster_security.go; publish goroutine only).
	publishedACLs []metadata.ACL
	aclsPublished bool
}

// openQuotas reads the single node's quota file and sets the sensors up
// with quota.window.num and quota.window.size.seconds.
func (b *Broker) openQuotas() error {
	w := quota.DefaultWindow
	if n, err := strconv.Atoi(b.cfg.Raw["quota.window.num"]); err == nil && n > 0 {
		w.Samples = n
	}
	if n, err := strconv.Atoi(b.cfg.Raw["quota.window.size.seconds"]); err == nil && n > 0 {
		w.Size = time.Duration(n) * time.Second
	}
	qs := &quotaState{mgr: quota.NewManager(w, nil), path: filepath.Join(b.dataDir, quotasFile)}
	q := quota.Quotas{}
	data, err := vfs.ReadFile(b.fs, qs.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("sluice: reading client quotas: %w", err)
	default:
		var d quotasDoc
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("sluice: %s is corrupt: %w", qs.path, err)
		}
		if d.Version != quotasFileVersion {
			return fmt.Errorf("sluice: %s has version %d; this Sluice reads version %d", qs.path, d.Version, quotasFileVersion)
		}
		if d.Quotas != nil {
			q = d.Quotas
		}
	}
	qs.local.Store(&q)
	b.quotas = qs
	b.metrics.Registry.MustRegister(throttleCollector{qs.mgr})
	return nil
}

// throttleCollector exports the throttle time handed out per quota sensor.
type throttleCollector struct{ mgr *quota.Manager }

var throttleDesc = prometheus.NewDesc("sluice_client_quota_throttle_seconds_total",
	"Throttle time given to clients over a quota, by quota type and by the user and client id the quota is shared by.",
	[]string{"quota_type", "user", "client_id"}, nil)

func (c throttleCollector) Describe(ch chan<- *prometheus.Desc) { ch <- throttleDesc }

func (c throttleCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.mgr.Throttled() {
		ch <- prometheus.MustNewConstMetric(throttleDesc, prometheus.CounterValue, s.Total.Seconds(),
			string(s.Kind), s.Tags.User, s.Tags.ClientID)
	}
}

// clientQuotas returns the quotas in force on this broker.
func (b *Broker) clientQuotas() quota.Quotas {
	if im := b.image(); im != nil {
		return quota.Quotas(im.ClientQuotas)
	}
	if b.quotas == nil {
		return nil
	}
	return *b.quotas.local.Load()
}

// quotaIndex returns the quotas in force prepared for lookups (nil when
// none is set), rebuilt when the quotas change.
func (b *Broker) quotaIndex() *quota.Index {
	q := b.clientQuotas()
	if len(q) == 0 || b.quotas == nil {
		return nil
	}
	p := reflect.ValueOf(q).Pointer()
	if c := b.quotas.index.Load(); c != nil && reflect.ValueOf(c.src).Pointer() == p {
		return c.ix
	}
	ix := quota.NewIndex(q)
	// src keeps the map alive, so no other map can take its address while
	// the cache names it.
	b.quotas.index.Store(&quotaIndexCache{src: q, ix: ix})
	return ix
}

type quotaIndexCache struct {
	src quota.Quotas
	ix  *quota.Index
}

// alterLocalQuotas applies validated entries on a single node, durably.
func (b *Broker) alterLocalQuotas(entries map[string][]quota.Op, order []string) error {
	qs := b.quotas
	qs.mu.Lock()
	defer qs.mu.Unlock()
	cur := *qs.local.Load()
	next := make(quota.Quotas, len(cur)+len(order))
	for k, v := range cur {
		next[k] = v
	}
	for _, ent := range order {
		if set := quota.Alter(next[ent], entries[ent]); set == nil {
			delete(next, ent)
		} else {
			next[ent] = set
		}
	}
	data, err := json.MarshalIndent(quotasDoc{Version: quotasFileVersion, Quotas: next}, "", "  ")
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(b.fs, qs.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("storing client quotas: %w", err)
	}
	qs.local.Store(&next)
	return nil
}

// quotaUser is the user name quotas know r's client by: the principal's
// name (ANONYMOUS without authentication).
func quotaUser(r *wire.Request) string {
	p := r.Conn.Principal()
	if _, name, ok := strings.Cut(p, ":"); ok {
		return name
	}
	return p
}

// recordQuota records value for r's client against its quota of kind and
// returns the throttle time it earned (zero without a quota).
func (b *Broker) recordQuota(r *wire.Request, kind quota.Kind, value float64) time.Duration {
	ix := b.quotaIndex()
	if ix == nil || r == nil {
		return 0
	}
	limit, tags, ok := ix.Resolve(quota.KeyOf(kind), quotaUser(r), r.Header.ClientIDString())
	if !ok {
		return 0
	}
	return b.quotas.mgr.Record(kind, tags, limit, value)
}

// throttle puts d in resp (the larger of it and what is there) and mutes
// the connection for it.
func throttle(r *wire.Request, resp kmsg.Response, d time.Duration) {
	if d <= 0 {
		return
	}
	ms := int32(min(d.Milliseconds(), int64(1<<31-1)))
	if tr, ok := resp.(interface {
		Throttle() (int32, bool)
		SetThrottle(int32)
	}); ok {
		if cur, _ := tr.Throttle(); cur < ms {
			tr.SetThrottle(ms)
		}
	}
	if r != nil && r.Conn != nil {
		r.Conn.Throttle(d)
	}
}

// quotaExempt lists the keys the request quota does not apply to: the SASL
// exchange and ApiVersions (a client must be able to connect and
// authenticate), and the broker-to-broker keys.
func quotaExempt(key int16) bool {
	switch key {
	case 17, 18, 36, 27: // SaslHandshake, ApiVersions, SaslAuthenticate, WriteTxnMarkers
		return true
	}
	return false
}

// quotaRequest returns the context a request is handled with and the
// function that applies the request quota (request_percentage) once it
// has been, returning the response to send: the share of one handler's
// time the client used, measured as the handler's wall time minus the time
// it spent waiting (long polls: waitAny notes it, noteWait), so that only
// work counts, as Kafka counts request thread time. JoinGroup and
// SyncGroup, which mostly wait for the rest of the group, are not
// measured. The throttle goes into every response with a throttle field,
// after the handler's own byte-rate throttle (the larger wins). A response
// of a version older than KIP-219 (whose clients do not back off by
// themselves) is sent only once its throttle time has passed, as Kafka
// does.
func (b *Broker) quotaRequest(ctx context.Context, r *wire.Request) (context.Context, func(kmsg.Response) kmsg.Response) {
	if quotaExempt(r.Header.APIKey) || b.quotaIndex() == nil {
		return ctx, func(resp kmsg.Response) kmsg.Response { return resp }
	}
	start := time.Now()
	m := &waitMeter{}
	return context.WithValue(ctx, waitMeterKey{}, m), func(resp kmsg.Response) kmsg.Response {
		if resp == nil {
			return nil
		}
		if r.Header.APIKey == 1 { // a follower's fetch is the cluster's own traffic
			if fr, ok := r.Body.(*kmsg.FetchRequest); ok && fetchReplicaID(fr) >= 0 {
				return resp
			}
		}
		var used float64
		if k := r.Header.APIKey; k != 11 && k != 14 { // JoinGroup, SyncGroup: waiting for the group
			used = max(time.Since(start)-time.Duration(m.waited.Load()), 0).Seconds() * 100 // percent-seconds of one thread
		}
		d := b.recordQuota(r, quota.Request, used)
		target := resp
		df, deferred := resp.(*wire.Deferred)
		if deferred {
			target = df.Response
		}
		throttle(r, target, d)
		return delayOldThrottled(ctx, resp, target, df)
	}
}

// delayOldThrottled holds a throttled response of a version older than
// KIP-219 for its throttle time (target is the response itself, or the one
// df finishes).
func delayOldThrottled(ctx context.Context, resp, target kmsg.Response, df *wire.Deferred) kmsg.Response {
	tr, ok := target.(interface{ Throttle() (int32, bool) })
	if !ok {
		return resp
	}
	ms, after := tr.Throttle()
	if ms <= 0 || after {
		return resp
	}
	hold := func() {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	if df != nil {
		wait := df.Wait
		df.Wait = func() error {
			err := wait()
			hold()
			return err
		}
		return df
	}
	return &wire.Deferred{Response: resp, Wait: func() error { hold(); return nil }}
}

// waitMeter adds up the time a request's handler spent waiting.
type waitMeter struct{ waited atomic.Int64 }

type waitMeterKey struct{}

// noteWait adds the time since start to the request's waiting time.
func noteWait(ctx context.Context, start time.Time) {
	if m, ok := ctx.Value(waitMeterKey{}).(*waitMeter); ok {
		m.waited.Add(int64(time.Since(start)))
	}
}

// Authorization: the authorizer of the broker (authorizer.class.name) and the
// helpers every handler uses to check (resource, operation) pairs with
// Apache Kafka's KafkaApis semantics. With no authorizer configured, b.authz
// is nil and every check allows, exactly as before the authorizer existed.
//
// The principal is the connection's (wire.ConnState.Principal: User:ANONYMOUS
// on PLAINTEXT, the SASL user, or the subject of a verified client
// certificate); the host is the client's IP address. A denial is logged at
// INFO as an audit line, at most once per principal, resource and operation
// per minute (authz.Auditor).

package broker

import (
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

// auditInterval bounds how often one denial is logged.
const auditInterval = time.Minute

// openAuthorizer sets b.authz up from the configuration: none without
// authorizer.class.name, else Sluice's authorizer over the bindings of the
// data directory's acls.json.
func (b *Broker) openAuthorizer() error {
	if b.cfg.AuthorizerClassName == "" {
		return nil
	}
	store, initial, err := authz.OpenFileStore(b.fs, b.dataDir)
	if err != nil {
		return err
	}
	var st authz.Store = store
	if b.clusterCfg != nil { // the ACLs come from the cluster metadata (cluster_security.go)
		st, initial = nil, nil
	}
	b.authz = authz.New(authz.Config{SuperUsers: b.cfg.SuperUsers, AllowIfNoACL: b.cfg.AllowEveryoneIfNoACL}, initial, st)
	b.audit = &authz.Auditor{Interval: auditInterval}
	b.logger.Info("authorizer enabled", "class", b.cfg.AuthorizerClassName, "acls", len(initial),
		"super_users", len(b.cfg.SuperUsers), "allow_everyone_if_no_acl_found", b.cfg.AllowEveryoneIfNoACL)
	return nil
}

// Authorizer returns the broker's authorizer, nil when none is configured.
// The cluster metadata layer feeds it with Apply / Replace.
func (b *Broker) Authorizer() *authz.Authorizer { return b.authz }

// authzRequest is who sends r.
func authzRequest(r *wire.Request) authz.Request {
	ar := authz.Request{Principal: wire.AnonymousPrincipal}
	if r == nil {
		return ar
	}
	ar.Principal = r.Conn.Principal()
	if r.Remote != nil {
		host := r.Remote.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if ip := net.ParseIP(host); ip != nil {
			host = ip.String()
		}
		ar.Host = host
	}
	return ar
}

// allowed checks op on the resource for r's principal and logs a denial.
func (b *Broker) allowed(r *wire.Request, op authz.Operation, rt authz.ResourceType, name string) bool {
	return b.check(r, op, rt, name, true)
}

// allowedQuiet is allowed without the audit line (Kafka's logIfDenied=false:
// filtering lists, computing authorized operations, fallbacks).
func (b *Broker) allowedQuiet(r *wire.Request, op authz.Operation, rt authz.ResourceType, name string) bool {
	return b.check(r, op, rt, name, false)
}

func (b *Broker) check(r *wire.Request, op authz.Operation, rt authz.ResourceType, name string, logDenied bool) bool {
	if b.authz == nil {
		return true
	}
	ar := authzRequest(r)
	d := b.authz.Decide(ar, op, rt, name)
	if !d.Allowed && logDenied && b.audit.Allow(ar.Principal, op, rt, name) {
		api := ""
		if r != nil && r.Body != nil {
			api = kmsg.NameForKey(r.Body.Key())
		}
		b.logger.Info("authorization denied", "principal", ar.Principal, "host", ar.Host, "operation", op.String(),
			"resource_type", rt.String(), "resource", name, "api", api, "reason", d.Reason,
			"note", "logged at most once a minute per principal, resource and operation")
	}
	return d.Allowed
}

// allowedCluster checks op on the CLUSTER resource.
func (b *Broker) allowedCluster(r *wire.Request, op authz.Operation) bool {
	return b.allowed(r, op, authz.ResourceCluster, authz.ClusterName)
}

// allowedTopics checks op on each distinct name once and returns the
// denied names (nil when all are allowed).
func (b *Broker) deniedTopics(r *wire.Request, op authz.Operation, names []string) map[string]bool {
	if b.authz == nil {
		return nil
	}
	var denied map[string]bool
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if !b.allowed(r, op, authz.ResourceTopic, n) {
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[n] = true
		}
	}
	return denied
}

// authorizedOps is the authorized-operations bit field of a resource for
// r's principal; every supported operation without an authorizer.
func (b *Broker) authorizedOps(r *wire.Request, rt authz.ResourceType, name string) int32 {
	if b.authz == nil {
		return authz.AllOps(rt)
	}
	return b.authz.AuthorizedOps(authzRequest(r), rt, name)
}

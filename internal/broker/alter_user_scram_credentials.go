// AlterUserScramCredentials (key 51), v0.
//
// Adds, replaces and deletes SCRAM-SHA-256 / SCRAM-SHA-512 credentials
// (kafka-configs --alter --entity-type users --add-config
// 'SCRAM-SHA-256=[password=...]'). The client sends a salt and the salted
// password; the broker keeps the salt, iterations, stored key and server
// key (RFC 5802) in the data directory's SCRAM credential file, replaced
// atomically and fsynced before the answer, so credentials survive a
// restart. On a cluster node they are cluster metadata records instead,
// committed through the active controller before the answer and applied
// by every node (cluster_scram.go). Kafka's checks, per user (results in request order; Kafka's
// order is unspecified):
//   - empty name → UNACCEPTABLE_CREDENTIAL (93) (so is a name that is not
//     valid UTF-8, which Kafka would have decoded with replacement
//     characters); unknown mechanism →
//     UNSUPPORTED_SASL_MECHANISM (33);
//   - iterations below 4096 or above 16384 → UNACCEPTABLE_CREDENTIAL;
//   - a user named twice in one request (deletions and upsertions
//     together) → DUPLICATE_RESOURCE (92) for that user, nothing applied
//     for it;
//   - deleting a credential that does not exist → RESOURCE_NOT_FOUND (91).
// As in Kafka, the salt is not checked (sarama sends an empty one unless
// told otherwise).

package broker

import (
	"context"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.AlterUserSCRAMCredentials, (*Broker).handleAlterUserSCRAMCredentials) }

type scramAlterResult struct {
	code   int16
	msg    string
	change *security.ScramChange
}

func (b *Broker) handleAlterUserSCRAMCredentials(_ context.Context, r *wire.Request, req *kmsg.AlterUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if !b.allowedCluster(r, authz.OpAlter) { // Kafka: ALTER on the cluster; nothing changes
		seen := map[string]bool{}
		users := make([]string, 0, len(req.Deletions)+len(req.Upsertions))
		for _, d := range req.Deletions {
			users = append(users, d.Name)
		}
		for _, u := range req.Upsertions {
			users = append(users, u.Name)
		}
		for _, u := range users {
			if !seen[u] {
				seen[u] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode, res.ErrorMessage = u, kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(clusterAuthMessage)
				resp.Results = append(resp.Results, res)
			}
		}
		return resp, nil
	}
	results := map[string]*scramAlterResult{}
	var order []string
	// add records a user's result; res nil means the user was named again,
	// which turns a valid change into DUPLICATE_RESOURCE (a first error
	// stands, as in Kafka).
	add := func(user string, res *scramAlterResult) {
		prev, seen := results[user]
		switch {
		case !seen:
			order = append(order, user)
			results[user] = res
		case prev.code == 0:
			results[user] = &scramAlterResult{code: kerr.DuplicateResource.Code,
				msg: "A user credential cannot be altered twice in the same request"}
		}
	}
	for _, d := range req.Deletions {
		if _, dup := results[d.Name]; dup {
			add(d.Name, nil)
			continue
		}
		m, res := checkScramUserMechanism(d.Name, d.Mechanism)
		if res == nil {
			if _, ok := b.scram.Lookup(d.Name, m); !ok {
				res = &scramAlterResult{code: kerr.ResourceNotFound.Code, msg: "Attempt to delete a user credential that does not exist"}
			} else {
				res = &scramAlterResult{change: &security.ScramChange{User: d.Name, Mechanism: m, Delete: true}}
			}
		}
		add(d.Name, res)
	}
	for _, u := range req.Upsertions {
		if _, dup := results[u.Name]; dup {
			add(u.Name, nil)
			continue
		}
		m, res := checkScramUserMechanism(u.Name, u.Mechanism)
		switch {
		case res != nil:
		case u.Iterations < security.ScramMinIterations:
			res = &scramAlterResult{code: kerr.UnacceptableCredential.Code, msg: "Too few iterations"}
		case u.Iterations > security.ScramMaxIterations:
			res = &scramAlterResult{code: kerr.UnacceptableCredential.Code, msg: "Too many iterations"}
		default:
			c := m.NewScramCredential(u.Salt, u.SaltedPassword, int(u.Iterations))
			res = &scramAlterResult{change: &security.ScramChange{User: u.Name, Mechanism: m, Credential: c}}
		}
		add(u.Name, res)
	}
	var changes []security.ScramChange
	for _, user := range order {
		if res := results[user]; res.change != nil && res.code == 0 {
			changes = append(changes, *res.change)
		}
	}
	if err := b.storeScram(changes); err != nil { // cluster_scram.go
		b.logger.Error("AlterUserScramCredentials: could not store the credentials", "err", err)
		code, msg := kerr.UnknownServerError.Code, "The credentials could not be stored: "+err.Error()
		if be, ok := err.(*Error); ok && be.Code != 0 { // a cluster node's controller answer
			code, msg = be.Code, be.Msg
		}
		for _, user := range order {
			if res := results[user]; res.change != nil && res.code == 0 {
				res.code, res.msg = code, msg
			}
		}
	}
	for _, user := range order {
		res := results[user]
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User = user
		rr.ErrorCode = res.code
		if res.code != 0 {
			rr.ErrorMessage = kmsg.StringPtr(res.msg)
		} else {
			op := "upserted"
			if res.change.Delete {
				op = "deleted"
			}
			b.logger.Info("SCRAM credential "+op, "user", user, "mechanism", res.change.Mechanism.Name,
				"by", r.Conn.Principal(), "remote", r.Remote)
		}
		resp.Results = append(resp.Results, rr)
	}
	return resp, nil
}

func checkScramUserMechanism(user string, mech int8) (security.ScramMechanism, *scramAlterResult) {
	if user == "" {
		return security.ScramMechanism{}, &scramAlterResult{code: kerr.UnacceptableCredential.Code, msg: "Username must not be empty"}
	}
	if !utf8.ValidString(user) {
		// The credential file is JSON: such a name would not survive a
		// restart intact. (Kafka decodes names as UTF-8 with replacement.)
		return security.ScramMechanism{}, &scramAlterResult{code: kerr.UnacceptableCredential.Code, msg: "Username must be valid UTF-8"}
	}
	m, ok := security.ScramMechanismByType(mech)
	if !ok {
		return m, &scramAlterResult{code: kerr.UnsupportedSaslMechanism.Code, msg: "Unknown SCRAM mechanism"}
	}
	return m, nil
}

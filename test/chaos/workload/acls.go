package workload

// ACL bindings in the metadata workload: the nodes run with an authorizer
// (the checker's node config, AclProps), the workload creates bindings and
// deletes some of those whose creation was acknowledged, and every node's
// final view lists the bindings it holds (DescribeAcls asked of it alone).
// All of them allow principal AclPrincipal to read one topic of its own,
// chaos-acl-1, chaos-acl-2, … (names never reused); no client runs as that
// principal, so they change nothing the other workloads do.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AclPrincipal is the principal of the metadata workload's bindings.
const AclPrincipal = "User:chaos-acl"

// AclTopicPrefix names the topics of the metadata workload's bindings (no
// such topic is created: a binding may name a topic that does not exist).
const AclTopicPrefix = "chaos-acl-"

// AclProps is what the nodes' server.properties need for ACLs to be stored
// at all (without an authorizer the ACL APIs answer SECURITY_DISABLED, as
// Apache Kafka's do): the authorizer, with the principal every connection
// of a run has (PLAINTEXT: User:ANONYMOUS; clients, brokers and the
// controller alike) a super user, so the workloads keep doing everything.
var AclProps = map[string]string{
	"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users":           "User:ANONYMOUS",
}

// aclDefinitelyNot tells whether a CreateAcls or DeleteAcls error means the
// change was certainly not made: the request was refused as invalid or
// unauthorized, or ACLs are off.
func aclDefinitelyNot(err error) bool {
	return definitelyNot(err) || errors.Is(err, kerr.SecurityDisabled) || errors.Is(err, kerr.ClusterAuthorizationFailed)
}

// createAcl creates the binding of resource name (READ on that topic for
// AclPrincipal, any host).
func createAcl(ctx context.Context, cl *kgo.Client, name string) error {
	req := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType = kmsg.ACLResourceTypeTopic
	c.ResourceName = name
	c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
	c.Principal = AclPrincipal
	c.Host = "*"
	c.Operation = kmsg.ACLOperationRead
	c.PermissionType = kmsg.ACLPermissionTypeAllow
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Results) != 1 {
		return fmt.Errorf("CreateAcls: %d results for 1 creation", len(resp.Results))
	}
	return kerr.ErrorForCode(resp.Results[0].ErrorCode)
}

// deleteAcl deletes the binding of resource name; it returns how many
// bindings the deletion matched.
func deleteAcl(ctx context.Context, cl *kgo.Client, name string) (int, error) {
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType = kmsg.ACLResourceTypeTopic
	f.ResourceName = kmsg.StringPtr(name)
	f.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
	f.Principal = kmsg.StringPtr(AclPrincipal)
	f.Host = kmsg.StringPtr("*")
	f.Operation = kmsg.ACLOperationRead
	f.PermissionType = kmsg.ACLPermissionTypeAllow
	req.Filters = append(req.Filters, f)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Results) != 1 {
		return 0, fmt.Errorf("DeleteAcls: %d results for 1 filter", len(resp.Results))
	}
	r := resp.Results[0]
	return len(r.MatchingACLs), kerr.ErrorForCode(r.ErrorCode)
}

// aclOp runs one ACL operation of the metadata workload on behalf of
// process proc and records it: a creation of the next binding, or (a third
// of the time, when there are some) the deletion of one whose creation was
// acknowledged. It updates live (acknowledged bindings not yet deleted) and
// returns whether the outcome is unknown.
func (e *Env) aclOp(cl *kgo.Client, proc int, next *int, live *[]string, pick int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var f string
	var m history.Mop
	var err error
	if len(*live) > 0 && pick%3 == 0 {
		i := (pick / 3) % len(*live)
		name := (*live)[i]
		*live = append((*live)[:i], (*live)[i+1:]...) // deleted or not, never again
		f, m = history.FDeleteAcl, history.Mop{F: history.MAcl, Key: name}
		e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: f, Client: "franz-go", Value: []history.Mop{m}})
		var n int
		n, err = deleteAcl(ctx, cl, name)
		if err == nil {
			m.Value = history.I64(int64(n))
		}
	} else {
		*next++
		name := fmt.Sprintf("%s%d", AclTopicPrefix, *next)
		f, m = history.FCreateAcl, history.Mop{F: history.MAcl, Key: name}
		e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: f, Client: "franz-go", Value: []history.Mop{m}})
		if err = createAcl(ctx, cl, name); err == nil {
			*live = append(*live, name)
		}
	}
	typ := history.OK
	switch {
	case err == nil:
	case aclDefinitelyNot(err):
		typ = history.Fail
	default:
		typ = history.Info
	}
	e.Rec.Record(history.Op{Process: proc, Type: typ, F: f, Client: "franz-go", Value: []history.Mop{m}, Error: errText(err)})
	return typ == history.Info
}

// aclView lists the metadata workload's bindings node cl's first seed
// broker holds: one "acl" mop per resource name, its value the number of
// bindings.
func aclView(ctx context.Context, cl *kgo.Client) ([]history.Mop, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Principal = kmsg.StringPtr(AclPrincipal)
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	kr, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("describe acls: %w", err)
	}
	resp := kr.(*kmsg.DescribeACLsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe acls: %w", err)
	}
	count := map[string]int64{}
	for _, r := range resp.Resources {
		count[r.ResourceName] += int64(len(r.ACLs))
	}
	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]history.Mop, 0, len(names))
	for _, n := range names {
		out = append(out, history.Mop{F: history.MAcl, Key: n, Value: history.I64(count[n])})
	}
	return out, nil
}

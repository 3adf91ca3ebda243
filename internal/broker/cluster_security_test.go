package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nodeAdmin is a kadm client that talks to one node only.
func nodeAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// rawRequest sends req on a fresh connection to addr and reads the answer
// into resp (versions set by the caller).
func rawRequest(t *testing.T, addr string, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	rc := dialRaw(t, addr)
	rc.send(req, 1)
	rc.recv(resp)
	rc.nc.Close()
}

// pollUntil retries cond until it holds or 20 s have passed.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClusterACLsAndQuotasInMetadata(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found": "true",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "secret"); err != nil {
		t.Fatal(err)
	}
	n1, n2, n3 := tc.nodes[0].addr, tc.nodes[1].addr, tc.nodes[2].addr

	topicErr := func(addr string) int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("secret")
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 12
		rawRequest(t, addr, req, resp)
		return resp.Topics[0].ErrorCode
	}
	pollUntil(t, "node 3 to know the topic", func() bool { return topicErr(n3) == 0 })

	// An ACL created through node 1 is enforced on node 3.
	deny := kadm.NewACLs().Topics("secret").Deny("User:ANONYMOUS").DenyHosts("*").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := nodeAdmin(t, n1).CreateACLs(ctx, deny)
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	if got := topicErr(n1); got != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("node 1 (which answered the creation) does not enforce it yet: %d", got)
	}
	pollUntil(t, "node 3 to deny Describe on the topic", func() bool { return topicErr(n3) == kerr.TopicAuthorizationFailed.Code })
	// Every node describes it.
	desc, err := nodeAdmin(t, n3).DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().AllowHosts().Deny().DenyHosts())
	if err != nil || len(desc) != 1 || len(desc[0].Described) != 1 || desc[0].Described[0].Name != "secret" {
		t.Fatalf("describe on node 3: %v %+v", err, desc)
	}

	// Deleted through node 2, gone on node 3.
	del, err := nodeAdmin(t, n2).DeleteACLs(ctx, kadm.NewACLs().Topics("secret").ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Deny("User:ANONYMOUS").DenyHosts())
	if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 {
		t.Fatalf("delete ACL: %v %+v", err, del)
	}
	pollUntil(t, "node 3 to allow Describe again", func() bool { return topicErr(n3) == 0 })

	// A client quota set through node 2 is described (and enforced) by
	// node 3 from its metadata image.
	if _, err := nodeAdmin(t, n2).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: strp("alice")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 4096}}}}); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "node 3 to describe the quota", func() bool {
		d, err := nodeAdmin(t, n3).DescribeClientQuotas(ctx, false, nil)
		return err == nil && len(d) == 1 && len(d[0].Values) == 1 && d[0].Values[0].Value == 4096
	})
	if lim, _, ok := tc.nodes[2].broker().clientQuotas().Resolve("producer_byte_rate", "alice", "any"); !ok || lim != 4096 {
		t.Fatalf("node 3 resolves %v %v", lim, ok)
	}

	// The controller matches DeleteAcls filters: an ACL created through node 1
	// is deleted through node 3 at once, however far node 3 is behind.
	for i := 0; i < 3; i++ {
		acl := kadm.NewACLs().Groups(fmt.Sprintf("g%d", i)).Allow("User:bob").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
		if res, err := nodeAdmin(t, n1).CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
			t.Fatalf("create: %v %+v", err, res)
		}
		del, err := nodeAdmin(t, n3).DeleteACLs(ctx, kadm.NewACLs().Groups(fmt.Sprintf("g%d", i)).ResourcePatternType(kadm.ACLPatternAny).
			Operations(kadm.OpAny).Allow().AllowHosts())
		if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 {
			t.Fatalf("delete through another node: %v %+v", err, del)
		}
	}
}

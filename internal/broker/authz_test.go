package broker

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/security/sectest"
)

const authzJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw" user_bob="bob-pw";`

// authzBroker is a broker with Sluice's authorizer, a SASL_PLAINTEXT
// listener (PLAIN users admin, alice, bob; admin is a super user) and a
// PLAINTEXT one (User:ANONYMOUS).
type authzBroker struct {
	*testBroker
}

func startAuthzBroker(t *testing.T, extra map[string]string) *authzBroker {
	t.Helper()
	props := map[string]string{
		"authorizer.class.name":   "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":             "User:admin",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": authzJAAS,
	}
	for k, v := range extra {
		props[k] = v
	}
	tb := startTestBroker(t, testOptions{Props: props, Listeners: []security.Listener{
		{Name: "SASL_PLAINTEXT", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"},
		{Name: "PLAINTEXT", Protocol: security.Plaintext, Bind: "127.0.0.1:0"},
	}})
	return &authzBroker{tb}
}

// as returns a client authenticated as user ("" for the PLAINTEXT
// listener, User:ANONYMOUS).
func (ab *authzBroker) as(user string, opts ...kgo.Opt) *kgo.Client {
	ab.t.Helper()
	seed := ab.srv.ListenerAddr("SASL_PLAINTEXT").String()
	if user == "" {
		seed = ab.srv.ListenerAddr("PLAINTEXT").String()
	} else {
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: user + "-pw"}.AsMechanism()))
	}
	opts = append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.RetryTimeout(3 * time.Second), kgo.RequestRetries(1)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		ab.t.Fatal(err)
	}
	ab.t.Cleanup(cl.Close)
	return cl
}

// grant adds ALLOW bindings as the super user.
func (ab *authzBroker) grant(ctx context.Context, b *kadm.ACLBuilder) {
	ab.t.Helper()
	res, err := kadm.NewClient(ab.as("admin")).CreateACLs(ctx, b)
	if err != nil {
		ab.t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			ab.t.Fatalf("create ACL %+v: %v %s", r, r.Err, r.ErrMessage)
		}
	}
}

// send issues req on the broker directly (no client-side retries or
// routing) and returns the response.
func send[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

func codeName(c int16) string {
	if c == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(c).Error()
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: got %s, want %s", what, codeName(got), codeName(w))
	}
}

func TestAuthzACLAPIs(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	ctx := dpCtx(t, 20*time.Second)
	alice := ab.as("alice")
	admin := ab.as("admin")

	// Without ALTER/DESCRIBE on the cluster the ACL APIs are refused.
	dr := send[*kmsg.DescribeACLsResponse](t, alice, func() kmsg.Request {
		r := kmsg.NewPtrDescribeACLsRequest()
		r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = 1, 1, 1, 1
		return r
	}())
	wantCode(t, "alice DescribeAcls", dr.ErrorCode, kerr.ClusterAuthorizationFailed)
	created, err := kadm.NewClient(alice).CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(created) != 1 || !errors.Is(created[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice CreateAcls: %v %+v", err, created)
	}

	// The super user creates, lists and deletes.
	ab.grant(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts("*").
		Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	ab.grant(ctx, kadm.NewACLs().Groups("team-").Deny("User:bob").DenyHosts("*").
		Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed))
	ab.grant(ctx, kadm.NewACLs().Clusters().Allow("User:alice").AllowHosts("*").
		Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	// Creating an existing binding again succeeds and adds nothing.
	ab.grant(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts("*").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))

	all := kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	described, err := kadm.NewClient(admin).DescribeACLs(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range described {
		if d.Err != nil {
			t.Fatalf("describe: %v", d.Err)
		}
		n += len(d.Described)
	}
	if n != 4 {
		t.Fatalf("described %d bindings, want 4: %+v", n, described)
	}
	// alice has DESCRIBE on the cluster now: she may list ACLs too.
	dr = send[*kmsg.DescribeACLsResponse](t, alice, func() kmsg.Request {
		r := kmsg.NewPtrDescribeACLsRequest()
		r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = 2, 2, 1, 1 // TOPIC, MATCH
		r.ResourceName = kmsg.StringPtr("orders")
		return r
	}())
	if dr.ErrorCode != 0 || len(dr.Resources) != 1 || len(dr.Resources[0].ACLs) != 2 {
		t.Fatalf("alice describe MATCH orders: %+v", dr)
	}

	// Invalid bindings: Kafka's INVALID_REQUEST messages, nothing stored.
	cr := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   int8
		name string
		pt   int8
		pr   string
	}{
		{4, "other-cluster", 3, "User:x"}, // CLUSTER must be kafka-cluster
		{6, "tok", 3, "User:x"},           // DELEGATION_TOKEN refused
		{2, "t", 2, "User:x"},             // MATCH is a filter type
		{2, "t", 3, "x"},                  // principal without type
		{2, "", 3, "User:x"},              // empty name
	} {
		cc := kmsg.NewCreateACLsRequestCreation()
		cc.ResourceType, cc.ResourceName, cc.ResourcePatternType = kmsg.ACLResourceType(c.rt), c.name, kmsg.ACLResourcePatternType(c.pt)
		cc.Principal, cc.Host, cc.Operation, cc.PermissionType = c.pr, "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		cr.Creations = append(cr.Creations, cc)
	}
	cresp := send[*kmsg.CreateACLsResponse](t, admin, cr)
	wantMsgs := []string{
		"The only valid name for the CLUSTER resource is kafka-cluster",
		"Sluice does not support delegation tokens: ACLs on DELEGATION_TOKEN resources are refused",
		"Invalid patternType MATCH",
		"Could not parse principal from `x` (no colon is present separating the principal type from the principal name)",
		"Invalid empty resource name",
	}
	for i, r := range cresp.Results {
		if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != wantMsgs[i] {
			t.Errorf("creation %d: %s %v, want %q", i, codeName(r.ErrorCode), r.ErrorMessage, wantMsgs[i])
		}
	}
	if got := len(ab.broker().Authorizer().Bindings()); got != 4 {
		t.Fatalf("%d bindings after invalid creations, want 4", got)
	}

	// Durable: a restart keeps them.
	ab.restart()
	if got := len(ab.broker().Authorizer().Bindings()); got != 4 {
		t.Fatalf("%d bindings after restart, want 4", got)
	}

	// DeleteAcls with a MATCH filter removes what applies to topic orders.
	admin = ab.as("admin")
	deleted, err := kadm.NewClient(admin).DeleteACLs(ctx, kadm.NewACLs().Topics("orders").Allow().AllowHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternMatch))
	if err != nil || len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 2 {
		t.Fatalf("delete: %v %+v", err, deleted)
	}
	if got := len(ab.broker().Authorizer().Bindings()); got != 2 {
		t.Fatalf("%d bindings after delete, want 2", got)
	}
	// And alice cannot delete.
	deleted, err = kadm.NewClient(ab.as("alice")).DeleteACLs(ctx, all)
	if err != nil || len(deleted) != 1 || !errors.Is(deleted[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice delete: %v %+v", err, deleted)
	}
}

func TestAuthzProduceFetch(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	ctx := dpCtx(t, 30*time.Second)
	if _, err := kadm.NewClient(ab.as("admin")).CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	produce := func(cl *kgo.Client) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr()
	}
	// No ACL: an idempotent producer cannot even get a producer id
	// (IDEMPOTENT_WRITE on the cluster or WRITE on some topic needed).
	ipr := send[*kmsg.InitProducerIDResponse](t, ab.as("alice"), func() kmsg.Request {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionTimeoutMillis = 60000
		return r
	}())
	wantCode(t, "alice InitProducerId", ipr.ErrorCode, kerr.ClusterAuthorizationFailed)
	// UpdateFeatures needs ALTER on the cluster.
	ufr := send[*kmsg.UpdateFeaturesResponse](t, ab.as("alice"), func() kmsg.Request {
		r := kmsg.NewPtrUpdateFeaturesRequest()
		r.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, 2)}
		return r
	}())
	wantCode(t, "alice UpdateFeatures", ufr.ErrorCode, kerr.ClusterAuthorizationFailed)
	if err := produce(ab.as("alice", kgo.DisableIdempotentWrite())); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice produce without ACL: %v", err)
	}
	if end := endOffset(t, ab, "orders"); end != 0 {
		t.Fatalf("a denied produce appended: end offset %d", end)
	}

	ab.grant(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts("*").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err := produce(ab.as("alice")); err != nil { // idempotent: WRITE on a topic suffices
		t.Fatalf("alice produce with WRITE: %v", err)
	}

	consume := func(cl *kgo.Client) error {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		if n := len(fs.Records()); n != 1 {
			return errors.New("no record")
		}
		return nil
	}
	topicID, _ := ab.broker().Topics().Get("orders")
	fetchReq := func() kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		r.MaxWaitMillis, r.MaxBytes = 0, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "orders", topicID.ID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		r.Topics = append(r.Topics, ft)
		return r
	}
	fr := send[*kmsg.FetchResponse](t, ab.as("bob"), fetchReq())
	wantCode(t, "bob fetch", fr.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	// WRITE does not imply READ.
	fr = send[*kmsg.FetchResponse](t, ab.as("alice"), fetchReq())
	wantCode(t, "alice (WRITE only) fetch", fr.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)

	ab.grant(ctx, kadm.NewACLs().Topics("ord").Allow("User:bob").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err := consume(ab.as("bob", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))); err != nil {
		t.Fatalf("bob consume with prefixed READ: %v", err)
	}
	// A replica fetch needs CLUSTER_ACTION.
	rf := fetchReq().(*kmsg.FetchRequest)
	rf.ReplicaID, rf.ReplicaState.ID = 2, 2 // whichever the negotiated version carries
	fr = send[*kmsg.FetchResponse](t, ab.as("bob"), rf)
	wantCode(t, "bob replica fetch", fr.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)

	// ListOffsets needs DESCRIBE (implied by READ for bob, nothing for anonymous).
	lo := func(cl *kgo.Client) int16 {
		r := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "orders"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		r.Topics = append(r.Topics, lt)
		return send[*kmsg.ListOffsetsResponse](t, cl, r).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "bob ListOffsets", lo(ab.as("bob")), nil)
	wantCode(t, "anonymous ListOffsets", lo(ab.as("")), kerr.TopicAuthorizationFailed)

	// A DENY wins over the prefixed ALLOW.
	ab.grant(ctx, kadm.NewACLs().Topics("orders").Deny("User:bob").DenyHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	fr = send[*kmsg.FetchResponse](t, ab.as("bob"), fetchReq())
	wantCode(t, "bob fetch after DENY", fr.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)

	// Each denial is one audit line (at most one a minute per principal,
	// resource and operation).
	logs := ab.logs.text()
	if n := strings.Count(logs, `msg="authorization denied" principal=User:bob host=127.0.0.1 operation=READ resource_type=TOPIC resource=orders`); n != 1 {
		t.Fatalf("%d audit lines for bob READ orders, want 1:\n%s", n, logs)
	}
}

// endOffset is the log end offset of partition 0 of topic.
func endOffset(t *testing.T, ab *authzBroker, topic string) int64 {
	t.Helper()
	l, _, code := ab.broker().partitionLog(topic, 0)
	if code != 0 {
		t.Fatalf("partition %s/0: %s", topic, codeName(code))
	}
	return l.LogEndOffset()
}

func TestAuthzMetadata(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	ctx := dpCtx(t, 20*time.Second)
	if _, err := kadm.NewClient(ab.as("admin")).CreateTopics(ctx, 1, 1, nil, "a.visible", "b.hidden"); err != nil {
		t.Fatal(err)
	}
	ab.grant(ctx, kadm.NewACLs().Topics("a.").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	alice := ab.as("alice")

	all := kmsg.NewPtrMetadataRequest()
	all.IncludeTopicAuthorizedOperations = true
	mr := send[*kmsg.MetadataResponse](t, alice, all)
	if len(mr.Topics) != 1 || *mr.Topics[0].Topic != "a.visible" {
		t.Fatalf("alice sees %+v, want a.visible only", mr.Topics)
	}
	if got, want := mr.Topics[0].AuthorizedOperations, int32(1<<authz.OpRead|1<<authz.OpDescribe); got != want {
		t.Fatalf("authorized operations %b, want %b", got, want)
	}

	named := kmsg.NewPtrMetadataRequest()
	named.AllowAutoTopicCreation = true
	for _, n := range []string{"a.visible", "b.hidden", "a.new"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		named.Topics = append(named.Topics, rt)
	}
	mr = send[*kmsg.MetadataResponse](t, alice, named)
	wantCode(t, "a.visible", mr.Topics[0].ErrorCode, nil)
	wantCode(t, "b.hidden", mr.Topics[1].ErrorCode, kerr.TopicAuthorizationFailed)
	// a.new may be described (prefixed READ) but not created.
	wantCode(t, "a.new without CREATE", mr.Topics[2].ErrorCode, kerr.TopicAuthorizationFailed)
	if _, ok := ab.broker().Topics().Get("a.new"); ok {
		t.Fatal("a.new was auto-created without CREATE")
	}
	ab.grant(ctx, kadm.NewACLs().Topics("a.new").Allow("User:alice").AllowHosts("*").Operations(kadm.OpCreate).ResourcePatternType(kadm.ACLPatternLiteral))
	mr = send[*kmsg.MetadataResponse](t, alice, named)
	wantCode(t, "a.new with CREATE", mr.Topics[2].ErrorCode, nil)

}

func TestAuthzGroups(t *testing.T) {
	// (No 3 s initial rebalance delay for alice's group consumer.)
	ab := startAuthzBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx := dpCtx(t, 30*time.Second)
	adm := kadm.NewClient(ab.as("admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "events", "secret"); err != nil {
		t.Fatal(err)
	}
	if err := ab.as("admin").ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("e")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ab.grant(ctx, kadm.NewACLs().Topics("events").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	alice := ab.as("alice")

	// FindCoordinator and JoinGroup need DESCRIBE / READ on the group.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g1"}
	fresp := send[*kmsg.FindCoordinatorResponse](t, alice, fc)
	wantCode(t, "FindCoordinator g1", fresp.Coordinators[0].ErrorCode, kerr.GroupAuthorizationFailed)
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "g1", 10000, 10000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	wantCode(t, "JoinGroup g1", send[*kmsg.JoinGroupResponse](t, alice, jg).ErrorCode, kerr.GroupAuthorizationFailed)

	ab.grant(ctx, kadm.NewACLs().Groups("g1").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	cons := ab.as("alice", kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit())
	fs := cons.PollFetches(ctx)
	if errs := fs.Errors(); len(errs) > 0 || len(fs.Records()) != 1 {
		t.Fatalf("alice group consume: %v %d records", errs, len(fs.Records()))
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// OffsetCommit: READ on each topic; the allowed ones are committed.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation, oc.MemberID = "g1", -1, ""
	for _, tn := range []string{"events", "secret"} {
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = tn
		if tp, ok := ab.broker().topics.Get(tn); ok { // OffsetCommit v10 names topics by id
			ot.TopicID = [16]byte(tp.ID)
		}
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Offset = 1
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
	}
	cons.Close()
	waitFor(t, "group g1 empty", func() bool {
		gs, err := adm.DescribeGroups(ctx, "g1")
		return err == nil && gs["g1"].State == "Empty"
	})
	ocr := send[*kmsg.OffsetCommitResponse](t, alice, oc)
	for _, rt := range ocr.Topics {
		want := (*kerr.Error)(nil)
		if tp, ok := ab.broker().topicByID(rt.TopicID); ok && rt.Topic == "" {
			rt.Topic = tp.Name
		}
		if rt.Topic == "secret" {
			want = kerr.TopicAuthorizationFailed
		}
		wantCode(t, "OffsetCommit "+rt.Topic, rt.Partitions[0].ErrorCode, want)
	}
	// OffsetFetch of all topics leaves out what alice may not describe.
	offs, err := kadm.NewClient(ab.as("admin")).FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := offs.Lookup("secret", 0); ok {
		t.Fatal("a denied OffsetCommit stored an offset")
	}
	ofr := send[*kmsg.OffsetFetchResponse](t, alice, func() kmsg.Request {
		r := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g1"
		r.Groups = append(r.Groups, g)
		g2 := kmsg.NewOffsetFetchRequestGroup()
		g2.Group = "other"
		r.Groups = append(r.Groups, g2)
		return r
	}())
	for _, g := range ofr.Groups {
		switch g.Group {
		case "g1":
			if len(g.Topics) == 1 && g.Topics[0].Topic == "" { // v10 names topics by id
				if tp, ok := ab.broker().topicByID(g.Topics[0].TopicID); ok {
					g.Topics[0].Topic = tp.Name
				}
			}
			if g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Topic != "events" {
				t.Fatalf("OffsetFetch g1: %+v", g)
			}
		case "other":
			wantCode(t, "OffsetFetch other", g.ErrorCode, kerr.GroupAuthorizationFailed)
		}
	}

	// DescribeGroups, ListGroups, DeleteGroups.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g1", "other"}
	dg.IncludeAuthorizedOperations = true
	dgr := send[*kmsg.DescribeGroupsResponse](t, alice, dg)
	for _, g := range dgr.Groups {
		switch g.Group {
		case "g1":
			if g.ErrorCode != 0 || g.AuthorizedOperations != 1<<authz.OpRead|1<<authz.OpDescribe {
				t.Fatalf("DescribeGroups g1: %s ops %b", codeName(g.ErrorCode), g.AuthorizedOperations)
			}
		case "other":
			wantCode(t, "DescribeGroups other", g.ErrorCode, kerr.GroupAuthorizationFailed)
		}
	}
	lg := send[*kmsg.ListGroupsResponse](t, ab.as("bob"), kmsg.NewPtrListGroupsRequest())
	if len(lg.Groups) != 0 {
		t.Fatalf("bob lists %+v", lg.Groups)
	}
	if lg := send[*kmsg.ListGroupsResponse](t, alice, kmsg.NewPtrListGroupsRequest()); len(lg.Groups) != 1 {
		t.Fatalf("alice lists %+v", lg.Groups)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g1"}
	wantCode(t, "alice DeleteGroups", send[*kmsg.DeleteGroupsResponse](t, alice, del).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	if gs, err := adm.ListGroups(ctx); err != nil || len(gs) != 1 {
		t.Fatalf("a denied DeleteGroups deleted: %v %v", gs, err)
	}
}

func TestAuthzTransactions(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	ctx := dpCtx(t, 30*time.Second)
	if _, err := kadm.NewClient(ab.as("admin")).CreateTopics(ctx, 1, 1, nil, "tx-out"); err != nil {
		t.Fatal(err)
	}
	alice := ab.as("alice")
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID = kmsg.StringPtr("tx-1")
	ip.TransactionTimeoutMillis = 60000
	wantCode(t, "InitProducerId tx-1", send[*kmsg.InitProducerIDResponse](t, alice, ip).ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"tx-1"}
	wantCode(t, "FindCoordinator tx-1", send[*kmsg.FindCoordinatorResponse](t, alice, fc).Coordinators[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch = "tx-1", 1, 0
	wantCode(t, "EndTxn tx-1", send[*kmsg.EndTxnResponse](t, alice, et).ErrorCode, kerr.TransactionalIDAuthorizationFailed)

	ab.grant(ctx, kadm.NewACLs().TransactionalIDs("tx-").Allow("User:alice").AllowHosts("*").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
	ipr := send[*kmsg.InitProducerIDResponse](t, alice, ip)
	wantCode(t, "InitProducerId tx-1 with WRITE", ipr.ErrorCode, nil)

	// AddPartitionsToTxn: WRITE on the topic missing.
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.Version = 3
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = "tx-1", ipr.ProducerID, ipr.ProducerEpoch
	apt := kmsg.NewAddPartitionsToTxnRequestTopic()
	apt.Topic, apt.Partitions = "tx-out", []int32{0}
	ap.Topics = append(ap.Topics, apt)
	apr := send[*kmsg.AddPartitionsToTxnResponse](t, alice, capVersion(ap, 3)) // v4+ are broker-to-broker
	wantCode(t, "AddPartitionsToTxn", apr.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	// AddOffsetsToTxn: READ on the group missing.
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx-1", ipr.ProducerID, ipr.ProducerEpoch, "g"
	wantCode(t, "AddOffsetsToTxn", send[*kmsg.AddOffsetsToTxnResponse](t, alice, ao).ErrorCode, kerr.GroupAuthorizationFailed)

	// With WRITE on the topic a transactional producer commits.
	ab.grant(ctx, kadm.NewACLs().Topics("tx-out").Allow("User:alice").AllowHosts("*").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	tp := ab.as("alice", kgo.TransactionalID("tx-2"))
	if err := tp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tp.ProduceSync(ctx, &kgo.Record{Topic: "tx-out", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	if err := tp.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// WriteTxnMarkers is for brokers: CLUSTER_ACTION.
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch = ipr.ProducerID, ipr.ProducerEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "tx-out", []int32{0}
	m.Topics = append(m.Topics, mt)
	wm.Markers = append(wm.Markers, m)
	wmr := send[*kmsg.WriteTxnMarkersResponse](t, alice, wm)
	wantCode(t, "WriteTxnMarkers", wmr.Markers[0].Topics[0].Partitions[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	// So is AddPartitionsToTxn v4+: CLUSTER_ACTION, a top-level error.
	ap4 := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap4tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	ap4tx.TransactionalID, ap4tx.ProducerID, ap4tx.ProducerEpoch, ap4tx.VerifyOnly = "tx-1", ipr.ProducerID, ipr.ProducerEpoch, true
	ap4tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	ap4tt.Topic, ap4tt.Partitions = "tx-out", []int32{0}
	ap4tx.Topics = append(ap4tx.Topics, ap4tt)
	ap4.Transactions = append(ap4.Transactions, ap4tx)
	ap4r := send[*kmsg.AddPartitionsToTxnResponse](t, alice, ap4)
	if ap4r.Version < 4 {
		t.Fatalf("AddPartitionsToTxn sent at v%d, want v4+", ap4r.Version)
	}
	wantCode(t, "AddPartitionsToTxn v4+", ap4r.ErrorCode, kerr.ClusterAuthorizationFailed)
}

func TestAuthzAdmin(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	ctx := dpCtx(t, 30*time.Second)
	alice := ab.as("alice")
	aadm := kadm.NewClient(alice)

	// CreateTopics: CREATE on the cluster or on the topic.
	if res, _ := aadm.CreateTopics(ctx, 1, 1, nil, "team.a"); !errors.Is(res["team.a"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("create without CREATE: %+v", res["team.a"])
	}
	ab.grant(ctx, kadm.NewACLs().Topics("team.").Allow("User:alice").AllowHosts("*").
		Operations(kadm.OpCreate, kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternPrefixed))
	if res, err := aadm.CreateTopics(ctx, 1, 1, nil, "team.a"); err != nil || res["team.a"].Err != nil {
		t.Fatalf("create with CREATE on the prefix: %v %+v", err, res)
	}
	// CREATE on the cluster allows any topic.
	bob := kadm.NewClient(ab.as("bob"))
	if res, _ := bob.CreateTopics(ctx, 1, 1, nil, "bob.any"); !errors.Is(res["bob.any"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob creates without CREATE: %+v", res["bob.any"])
	}
	ab.grant(ctx, kadm.NewACLs().Clusters().Allow("User:bob").AllowHosts("*").Operations(kadm.OpCreate))
	if res, err := bob.CreateTopics(ctx, 1, 1, nil, "bob.any"); err != nil || res["bob.any"].Err != nil {
		t.Fatalf("create with CREATE on the cluster: %v %+v", err, res)
	}
	// DeleteTopics, CreatePartitions, DeleteRecords: denied, nothing changes.
	if res, _ := aadm.DeleteTopics(ctx, "team.a"); !errors.Is(res["team.a"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("delete without DELETE: %+v", res["team.a"])
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "team.a", 3
	cp.Topics = append(cp.Topics, cpt)
	cp.TimeoutMillis = 5000
	wantCode(t, "CreatePartitions without ALTER", send[*kmsg.CreatePartitionsResponse](t, alice, cp).Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
	if tp, ok := ab.broker().Topics().Get("team.a"); !ok || tp.Partitions != 1 {
		t.Fatal("a denied admin request changed the topic")
	}
	// DescribeConfigs on the topic is allowed, on the broker it is not.
	rc, err := aadm.DescribeTopicConfigs(ctx, "team.a")
	if err != nil || rc[0].Err != nil {
		t.Fatalf("describe topic configs: %v %+v", err, rc)
	}
	bc, err := aadm.DescribeBrokerConfigs(ctx, 1)
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) && (len(bc) != 1 || !errors.Is(bc[0].Err, kerr.ClusterAuthorizationFailed)) {
		t.Fatalf("describe broker configs: %v %+v", err, bc)
	}
	// AlterConfigs needs ALTER_CONFIGS.
	ar, err := aadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}, "team.a")
	if err != nil || !errors.Is(ar[0].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alter topic configs: %v %+v", err, ar)
	}
	// Cluster-wide APIs.
	ld := send[*kmsg.DescribeLogDirsResponse](t, alice, kmsg.NewPtrDescribeLogDirsRequest())
	wantCode(t, "DescribeLogDirs", ld.ErrorCode, kerr.ClusterAuthorizationFailed)
	ds := send[*kmsg.DescribeUserSCRAMCredentialsResponse](t, alice, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
	wantCode(t, "DescribeUserScramCredentials", ds.ErrorCode, kerr.ClusterAuthorizationFailed)
	as := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "bob", 1
	as.Deletions = append(as.Deletions, del)
	wantCode(t, "AlterUserScramCredentials", send[*kmsg.AlterUserSCRAMCredentialsResponse](t, alice, as).Results[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if got := send[*kmsg.DescribeClusterResponse](t, alice, dc).ClusterAuthorizedOperations; got != 0 {
		t.Fatalf("alice cluster operations %b", got)
	}
	if got := send[*kmsg.DescribeClusterResponse](t, ab.as("admin"), dc).ClusterAuthorizedOperations; got != authz.AllOps(authz.ResourceCluster) {
		t.Fatalf("admin cluster operations %b", got)
	}

	// The super user may do all of it.
	if res, err := kadm.NewClient(ab.as("admin")).DeleteTopics(ctx, "team.a"); err != nil || res["team.a"].Err != nil {
		t.Fatalf("admin delete: %v %+v", err, res)
	}
}

// allow.everyone.if.no.acl.found lets anyone at resources without ACLs, and
// only those.
func TestAuthzAllowEveryoneIfNoACL(t *testing.T) {
	ab := startAuthzBroker(t, map[string]string{"allow.everyone.if.no.acl.found": "true"})
	ctx := dpCtx(t, 20*time.Second)
	anon := ab.as("")
	if _, err := kadm.NewClient(anon).CreateTopics(ctx, 1, 1, nil, "open", "closed"); err != nil {
		t.Fatal(err)
	}
	ab.grant(ctx, kadm.NewACLs().Topics("closed").Allow("User:bob").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	mr := send[*kmsg.MetadataResponse](t, anon, kmsg.NewPtrMetadataRequest())
	var seen []string
	for _, mt := range mr.Topics {
		if !mt.IsInternal {
			seen = append(seen, *mt.Topic)
		}
	}
	if len(seen) != 1 || seen[0] != "open" {
		t.Fatalf("anonymous sees %v, want open only", seen)
	}
}

// Every API key served has been reviewed for authorization: adding a handler
// means deciding its (resource, operation) pairs (see authorize*.go) and
// listing it here.
func TestAuthzEveryAPIReviewed(t *testing.T) {
	reviewed := map[kmsg.Key]bool{}
	for _, k := range []kmsg.Key{
		kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.OffsetCommit, kmsg.OffsetFetch,
		kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.SyncGroup, kmsg.DescribeGroups,
		kmsg.ListGroups, kmsg.SASLHandshake, kmsg.ApiVersions, kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.DeleteRecords,
		kmsg.InitProducerID, kmsg.OffsetForLeaderEpoch, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn,
		kmsg.WriteTxnMarkers, kmsg.TxnOffsetCommit, kmsg.DescribeACLs, kmsg.CreateACLs, kmsg.DeleteACLs,
		kmsg.DescribeConfigs, kmsg.AlterConfigs, kmsg.DescribeLogDirs, kmsg.SASLAuthenticate, kmsg.CreatePartitions,
		kmsg.DeleteGroups, kmsg.ElectLeaders, kmsg.IncrementalAlterConfigs, kmsg.AlterPartitionAssignments,
		kmsg.ListPartitionReassignments, kmsg.OffsetDelete, kmsg.DescribeClientQuotas, kmsg.AlterClientQuotas,
		kmsg.DescribeUserSCRAMCredentials, kmsg.AlterUserSCRAMCredentials, kmsg.DescribeCluster, kmsg.DescribeProducers,
		kmsg.DescribeTransactions, kmsg.ListTransactions, kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe,
		kmsg.DescribeTopicPartitions, kmsg.DescribeQuorum, kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe,
		kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.DescribeShareGroupOffsets, kmsg.AlterShareGroupOffsets,
		kmsg.DeleteShareGroupOffsets, kmsg.AddRaftVoter, kmsg.RemoveRaftVoter, kmsg.UpdateRaftVoter, kmsg.UnregisterBroker, kmsg.UnregisterController,
		kmsg.UpdateFeatures, kmsg.StreamsGroupHeartbeat, kmsg.StreamsGroupDescribe, kmsg.StreamsGroupTopologyDescriptionUpdate,
		kmsg.InitializeShareGroupState, kmsg.ReadShareGroupState, kmsg.WriteShareGroupState, // share_coordinator.go
		kmsg.DeleteShareGroupState, kmsg.ReadShareGroupStateSummary,
		kmsg.AlterReplicaLogDirs, kmsg.ListConfigResources, // TestAuthzConfigResourcesAndLogDirs
	} {
		reviewed[k] = true
	}
	for _, s := range apiTable {
		if _, ok := supported(s.key); ok && !reviewed[kmsg.Key(s.key)] {
			t.Errorf("%s is served but its authorization has not been reviewed", kmsg.NameForKey(s.key))
		}
	}
}

// ssl.principal.mapping.rules turns the certificate subject into the
// principal the ACLs name; a client no rule applies to is refused.
func TestAuthzCertificatePrincipalRules(t *testing.T) {
	sb := startSecureBroker(t, map[string]string{
		"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
		"super.users":           "User:admin",
		"listener.name.ssl.ssl.principal.mapping.rules": `RULE:^CN=([^,]+),OU=eng,.*$/$1/L, RULE:^CN=nobody$/x/`,
	})
	ctx := dpCtx(t, 20*time.Second)
	admin := sb.clientOn("SASL_PLAINTEXT", kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, "mine", "theirs"); err != nil {
		t.Fatal(err)
	}
	res, err := kadm.NewClient(admin).CreateACLs(ctx, kadm.NewACLs().Topics("mine").Allow("User:alice").AllowHosts("*").
		Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	cl := sb.clientOn("SSL", sb.tlsOpt(true)) // subject CN=alice,OU=eng,O=Acme → User:alice
	mr := send[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
	var seen []string
	for _, mt := range mr.Topics {
		seen = append(seen, *mt.Topic)
	}
	if len(seen) != 1 || seen[0] != "mine" {
		t.Fatalf("User:alice sees %v, want [mine]", seen)
	}

	// A certificate no rule applies to is refused.
	other := sb.ca.Client(t, pkix.Name{CommonName: "mallory", OrganizationalUnit: []string{"ops"}})
	bad := sb.clientOn("SSL", kgo.DialTLSConfig(sectest.ClientTLS(sb.ca, other)))
	if err := authErr(bad); err == nil {
		t.Fatal("a certificate no mapping rule applies to was served")
	}
	waitFor(t, "refusal logged", func() bool {
		return strings.Contains(sb.logs.text(), "client certificate refused")
	})
}

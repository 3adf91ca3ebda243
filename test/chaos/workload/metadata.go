package workload

// The metadata workload, for a cluster: topics created and their configs
// altered while faults run (the metadata quorum must keep every acknowledged
// change), the controller each node names (availability of the controller),
// and every node's view after healing (which must converge).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
	"github.com/sluice-broker/sluice/test/chaos/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MetaTopicPrefix names the metadata workload's topics (chaos-meta-1, …).
const MetaTopicPrefix = "chaos-meta-"

// MetaConfig is the topic config the metadata workload alters; every value
// it sets is unique in the run (a base plus a fresh value number).
const MetaConfig = "retention.ms"

const metaConfigBase = 3_600_000_000

// definitelyNot tells whether a CreateTopics or IncrementalAlterConfigs
// error means the change was certainly not made (fail), rather than maybe
// made (info): the request was refused as invalid. A timeout, a lost
// connection or NOT_CONTROLLER may hide a change the controller committed.
func definitelyNot(err error) bool {
	for _, e := range []error{kerr.InvalidTopicException, kerr.InvalidReplicationFactor, kerr.InvalidPartitions,
		kerr.InvalidConfig, kerr.InvalidRequest, kerr.PolicyViolation, kerr.UnknownTopicOrPartition} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Metadata creates topics (one partition, replication factor 1) and sets
// MetaConfig on topics it created, one operation at a time, until ctx ends;
// with e.ACLs, a third of its operations create or delete ACL bindings
// (acls.go).
// Topics are chaos-meta-1, chaos-meta-2, … (names never reused); about half
// of the operations alter a topic whose creation was acknowledged. After an
// indeterminate result the client is replaced (a new process).
func (e *Env) Metadata(ctx context.Context, pause time.Duration, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	var created []string
	next := 0
	var liveAcls []string
	nextAcl := 0
	for ctx.Err() == nil {
		proc := e.NextProcess()
		cl, err := kgo.NewClient(e.baseOpts()...)
		if err != nil {
			e.Logf("metadata workload: %v", err)
			return
		}
		// ACL operations go one request each, never retried by the client:
		// a retry after a timed-out attempt makes two requests of one
		// operation, and the first may still be applied later (a paused
		// broker handles what it read before the pause when it resumes, as
		// Apache Kafka's does), after the operation was acknowledged and
		// even after a later deletion (finding 22 of docs/reliability.md).
		// The history must hold what each request did.
		aclCl, err := kgo.NewClient(append(e.baseOpts(), kgo.RequestRetries(0))...)
		if err != nil {
			cl.Close()
			e.Logf("metadata workload: %v", err)
			return
		}
		adm := kadm.NewClient(cl)
		for ctx.Err() == nil {
			wait(ctx, pause)
			if ctx.Err() != nil {
				break
			}
			if e.ACLs && rng.IntN(3) == 0 {
				if e.aclOp(aclCl, proc, &nextAcl, &liveAcls, rng.IntN(1<<20)) {
					break // an unknown outcome: a new process
				}
				continue
			}
			var f string
			var m history.Mop
			var opErr error
			octx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if len(created) > 0 && rng.IntN(2) == 0 {
				topic := created[rng.IntN(len(created))]
				v := metaConfigBase + e.NextValue()
				f, m = history.FAlterConfig, history.Mop{F: history.MAlter, Key: topic, Value: history.I64(v)}
				e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: f, Client: "franz-go", Value: []history.Mop{m}})
				val := strconv.FormatInt(v, 10)
				var resps kadm.AlterConfigsResponses
				resps, opErr = adm.AlterTopicConfigs(octx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: MetaConfig, Value: &val}}, topic)
				if opErr == nil {
					var r kadm.AlterConfigsResponse
					if r, opErr = resps.On(topic, nil); opErr == nil {
						opErr = r.Err
					}
				}
			} else {
				next++
				topic := MetaTopicPrefix + strconv.Itoa(next)
				f, m = history.FCreateTopic, history.Mop{F: history.MCreate, Key: topic}
				e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: f, Client: "franz-go", Value: []history.Mop{m}})
				var resp kadm.CreateTopicResponse
				resp, opErr = adm.CreateTopic(octx, 1, 1, nil, topic)
				if opErr == nil {
					opErr = resp.Err
				}
				if opErr == nil {
					created = append(created, topic)
				}
			}
			cancel()
			typ := history.OK
			switch {
			case opErr == nil:
			case definitelyNot(opErr):
				typ = history.Fail
			default:
				typ = history.Info
			}
			e.Rec.Record(history.Op{Process: proc, Type: typ, F: f, Client: "franz-go", Value: []history.Mop{m}, Error: errText(opErr)})
			if typ == history.Info {
				break
			}
		}
		cl.Close()
		aclCl.Close()
	}
}

// ObserveController asks node addr (and only it) for Metadata of the
// workload topics every interval until ctx ends, recording the controller id
// it names and the leader of each workload partition: how long the cluster
// is without a controller, and a partition without a leader, as clients see
// it.
func (e *Env) ObserveController(ctx context.Context, nodeID int, addr string, interval time.Duration) {
	proc := e.NextProcess()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
	if err != nil {
		e.Logf("controller observer: %v", err)
		return
	}
	defer cl.Close()
	id := nodeID
	for ctx.Err() == nil {
		e.Rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FController, Node: &id})
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := metadataOfTopics(qctx, cl, AppendTopic, TxnTopic)
		cancel()
		if err != nil {
			e.Rec.Record(history.Op{Process: proc, Type: history.Fail, F: history.FController, Node: &id, Error: err.Error()})
		} else {
			c := resp.ControllerID
			e.Rec.Record(history.Op{Process: proc, Type: history.OK, F: history.FController, Node: &id, Controller: &c, Leaders: leadersOf(resp)})
		}
		wait(ctx, interval)
	}
}

// nodeView is one node's metadata after healing.
type nodeView struct {
	mops      []history.Mop
	clusterID string
	err       error
}

// canonical is what must converge: topics, partition counts and configs.
// (The cluster id is recorded and checked, not waited for: a node's never
// changes while it runs.)
func (v nodeView) canonical() string {
	var b strings.Builder
	for _, m := range v.mops {
		fmt.Fprintf(&b, "%s %s %d;", m.F, m.Key, *m.Value)
	}
	return b.String()
}

// viewOf asks one node for every topic (name and partition count), the
// MetaConfig of each metadata-workload topic, the cluster id and, with
// acls, the metadata workload's ACL bindings.
func viewOf(ctx context.Context, cl *kgo.Client, acls bool) nodeView {
	resp, err := node.MetadataOf(ctx, cl, true)
	if err != nil {
		return nodeView{err: err}
	}
	v := nodeView{}
	if resp.ClusterID != nil {
		v.clusterID = *resp.ClusterID
	}
	var metaTopics []string
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 && t.ErrorCode != kerr.LeaderNotAvailable.Code {
			continue
		}
		v.mops = append(v.mops, history.Mop{F: history.MTopic, Key: *t.Topic, Value: history.I64(int64(len(t.Partitions)))})
		if strings.HasPrefix(*t.Topic, MetaTopicPrefix) {
			metaTopics = append(metaTopics, *t.Topic)
		}
	}
	if len(metaTopics) > 0 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, t := range metaTopics {
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType = kmsg.ConfigResourceTypeTopic
			r.ResourceName = t
			r.ConfigNames = []string{MetaConfig}
			req.Resources = append(req.Resources, r)
		}
		kr, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			return nodeView{err: fmt.Errorf("describe configs: %w", err)}
		}
		for _, r := range kr.(*kmsg.DescribeConfigsResponse).Resources {
			if r.ErrorCode != 0 {
				continue
			}
			for _, c := range r.Configs {
				if c.Name != MetaConfig || c.Value == nil {
					continue
				}
				n, err := strconv.ParseInt(*c.Value, 10, 64)
				if err != nil {
					n = -1
				}
				v.mops = append(v.mops, history.Mop{F: history.MConfig, Key: r.ResourceName, Value: history.I64(n)})
			}
		}
	}
	if acls {
		am, err := aclView(ctx, cl)
		if err != nil {
			return nodeView{err: err}
		}
		v.mops = append(v.mops, am...)
	}
	sort.Slice(v.mops, func(i, j int) bool {
		if v.mops[i].F != v.mops[j].F {
			return v.mops[i].F < v.mops[j].F
		}
		return v.mops[i].Key < v.mops[j].Key
	})
	return v
}

// FinalMetadata asks every node (directly) for its view: topics with their
// partition counts, the metadata workload's topic configs and the cluster
// id, until all views agree or ctx ends, then records each node's last view
// as one final-metadata operation (info for a node that did not answer).
func (e *Env) FinalMetadata(ctx context.Context, addrs []string) {
	clients := make([]*kgo.Client, len(addrs))
	for i, a := range addrs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
		if err != nil {
			e.Logf("final metadata: %v", err)
			return
		}
		defer cl.Close()
		clients[i] = cl
	}
	procs := make([]int, len(addrs))
	for i := range addrs {
		procs[i] = e.NextProcess()
		id := i + 1
		e.Rec.Record(history.Op{Process: procs[i], Type: history.Invoke, F: history.FFinalMetadata, Node: &id})
	}
	var views []nodeView
	for {
		views = views[:0]
		agree := true
		for _, cl := range clients {
			vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			v := viewOf(vctx, cl, e.ACLs)
			cancel()
			views = append(views, v)
			agree = agree && v.err == nil && v.canonical() == views[0].canonical()
		}
		if agree {
			break
		}
		select {
		case <-ctx.Done():
			e.Logf("final metadata: the nodes' views still differ (or a node does not answer) when the deadline came")
		case <-time.After(500 * time.Millisecond):
			continue
		}
		break
	}
	for i, v := range views {
		id := i + 1
		if v.err != nil {
			e.Rec.Record(history.Op{Process: procs[i], Type: history.Info, F: history.FFinalMetadata, Node: &id, Error: v.err.Error()})
			continue
		}
		e.Rec.Record(history.Op{Process: procs[i], Type: history.OK, F: history.FFinalMetadata, Node: &id, Value: v.mops, ClusterID: v.clusterID})
	}
}

// metadataOfTopics asks cl's first seed broker, and only it, for the
// metadata of the given topics.
func metadataOfTopics(ctx context.Context, cl *kgo.Client, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	kr, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return kr.(*kmsg.MetadataResponse), nil
}

// leadersOf maps each partition of a Metadata answer to its leader (-1 when
// the partition has an error or no leader).
func leadersOf(resp *kmsg.MetadataResponse) map[string]int32 {
	out := map[string]int32{}
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			l := p.Leader
			if p.ErrorCode != 0 {
				l = -1
			}
			out[Key(*t.Topic, p.Partition)] = l
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// WaitInSync waits until every workload partition has a leader and its
// in-sync set holds every replica (as the first of addrs sees it), or ctx
// ends; the error names the partitions still short of it.
func (e *Env) WaitInSync(ctx context.Context, addrs []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	var short []string
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := metadataOfTopics(qctx, cl, AppendTopic, TxnTopic)
		cancel()
		short = short[:0]
		if err == nil {
			for _, t := range resp.Topics {
				if t.Topic == nil || t.ErrorCode != 0 {
					short = append(short, fmt.Sprintf("%v: %v", t.Topic, kerr.ErrorForCode(t.ErrorCode)))
					continue
				}
				for _, p := range t.Partitions {
					if p.Leader < 0 || p.ErrorCode != 0 || len(p.ISR) < len(p.Replicas) {
						short = append(short, fmt.Sprintf("%s leader %d replicas %v in-sync %v", Key(*t.Topic, p.Partition), p.Leader, p.Replicas, p.ISR))
					}
				}
			}
			if len(short) == 0 {
				return nil
			}
		} else {
			short = append(short, err.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not every replica in sync: %s", strings.Join(short, "; "))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

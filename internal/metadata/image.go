package metadata

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// ID is a topic id (Kafka's UUID), base64url in JSON as Kafka prints it.
type ID [16]byte

// MarshalText encodes the id as unpadded base64url.
func (id ID) MarshalText() ([]byte, error) {
	return []byte(base64.RawURLEncoding.EncodeToString(id[:])), nil
}

// UnmarshalText decodes MarshalText's form.
func (id *ID) UnmarshalText(b []byte) error {
	n, err := base64.RawURLEncoding.Decode(id[:], b)
	if err != nil || n != 16 {
		return fmt.Errorf("metadata: bad topic id %q", b)
	}
	return nil
}

// NoLeader is a partition's leader when it has none (offline).
const NoLeader int32 = -1

// Endpoint is one listener of a broker as clients reach it.
type Endpoint struct {
	Listener string `json:"listener"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
}

// BrokerRegistration is a broker as the cluster knows it.
type BrokerRegistration struct {
	ID          int32      `json:"id"`
	Epoch       int64      `json:"epoch"`       // offset of the registration record
	Incarnation string     `json:"incarnation"` // changes every process start
	Endpoints   []Endpoint `json:"endpoints"`
	Rack        string     `json:"rack,omitempty"`
	Fenced      bool       `json:"fenced"`
	// PeerAddress is where other nodes reach its peer (controller) listener.
	PeerAddress string `json:"peer_address,omitempty"`
}

// Endpoint returns the broker's endpoint on listener name.
func (b *BrokerRegistration) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Partition is one partition's replication state.
type Partition struct {
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	// AddingReplicas and RemovingReplicas are set while a reassignment is
	// in progress (Kafka's partition record fields): Replicas is then the
	// target followed by the replicas being removed.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// ELR and LastKnownELR are the eligible leader replicas of KIP-966
	// (eligible.leader.replicas.version 1; internal/controller/elr.go).
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
}

func (p Partition) clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.AddingReplicas = slices.Clone(p.AddingReplicas)
	p.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	p.ELR = slices.Clone(p.ELR)
	p.LastKnownELR = slices.Clone(p.LastKnownELR)
	return p
}

// Reassigning reports whether a reassignment of the partition is in
// progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// HasReplica reports whether broker id holds a replica.
func (p *Partition) HasReplica(id int32) bool { return slices.Contains(p.Replicas, id) }

// Topic is one topic.
type Topic struct {
	Name       string            `json:"name"`
	ID         ID                `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []Partition       `json:"partitions"`
}

func (t *Topic) clone() *Topic {
	c := *t
	c.Configs = maps.Clone(t.Configs)
	c.Partitions = make([]Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		c.Partitions[i] = p.clone()
	}
	return &c
}

// Image is the metadata after some offset. Never modify an Image or
// anything reached from it.
type Image struct {
	// Offset is the quorum index of the last record applied (0: none).
	Offset    uint64
	ClusterID string
	// Features holds the finalized feature levels of the last SetFeatures
	// record (nil: none yet, the defaults apply).
	Features   map[string]int16
	Brokers    map[int32]*BrokerRegistration
	Topics     map[string]*Topic
	TopicsByID map[ID]*Topic
	// BrokerConfigs holds dynamic broker configs by entity ("" is the
	// cluster-wide default, "1" broker 1).
	BrokerConfigs map[string]map[string]string
	// NextProducerID is the first producer id not yet handed out.
	NextProducerID int64
	// GroupConfigs are the group configs by group id (image_groups.go).
	GroupConfigs map[string]map[string]string
	// ClientQuotas and ACLs: image_security.go.
	ClientQuotas map[string]map[string]float64
	ACLs         []ACL
	// Scram holds the SCRAM credentials by user and mechanism name
	// (image_scram.go). May be nil.
	Scram map[string]map[string]ScramCredential
	// QuorumNodes are the metadata quorum's members' peer addresses by
	// node id (SetQuorumNode; image_quorum.go). May be nil.
	QuorumNodes map[int32]QuorumNode

	attn *attention // image_attention.go; nil: not built by Apply
}

// Empty returns the image before any record.
func Empty() *Image {
	return &Image{
		Brokers:       map[int32]*BrokerRegistration{},
		Topics:        map[string]*Topic{},
		TopicsByID:    map[ID]*Topic{},
		BrokerConfigs: map[string]map[string]string{},
	}
}

// Broker returns broker id's registration.
func (im *Image) Broker(id int32) (*BrokerRegistration, bool) {
	b, ok := im.Brokers[id]
	return b, ok
}

// LiveBrokers returns the registered, unfenced brokers sorted by id.
func (im *Image) LiveBrokers() []*BrokerRegistration {
	out := make([]*BrokerRegistration, 0, len(im.Brokers))
	for _, b := range im.Brokers {
		if !b.Fenced {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// IsLive reports whether broker id is registered and unfenced.
func (im *Image) IsLive(id int32) bool {
	b, ok := im.Brokers[id]
	return ok && !b.Fenced
}

// Partition returns topic/partition's state.
func (im *Image) Partition(topic string, partition int32) (Partition, bool) {
	t, ok := im.Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[partition], true
}

// SortedTopics returns the topics sorted by name.
func (im *Image) SortedTopics() []*Topic {
	out := make([]*Topic, 0, len(im.Topics))
	for _, t := range im.Topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// builder is an image being changed by one batch: maps are copied the first
// time they are written.
type builder struct {
	im                                     *Image
	brokersCopied, topicsCopied, cfgCopied bool
	// owned are the topics this builder cloned: no published image reaches
	// them, so later records of the same batch change them in place (a
	// batch of N changes to one topic's partitions clones it once, not N
	// times).
	owned map[*Topic]bool
	// touched are the names of the topics this batch put or removed
	// (image_attention.go).
	touched map[string]bool
}

// ownTopic returns a copy of t this builder may change: t itself when the
// builder made it, else a clone.
func (b *builder) ownTopic(t *Topic) *Topic {
	if b.owned[t] {
		return t
	}
	nt := t.clone()
	if b.owned == nil {
		b.owned = map[*Topic]bool{}
	}
	b.owned[nt] = true
	return nt
}

func (b *builder) brokers() map[int32]*BrokerRegistration {
	if !b.brokersCopied {
		b.im.Brokers = maps.Clone(b.im.Brokers)
		b.brokersCopied = true
	}
	return b.im.Brokers
}

func (b *builder) topics() (map[string]*Topic, map[ID]*Topic) {
	if !b.topicsCopied {
		b.im.Topics = maps.Clone(b.im.Topics)
		b.im.TopicsByID = maps.Clone(b.im.TopicsByID)
		b.topicsCopied = true
	}
	return b.im.Topics, b.im.TopicsByID
}

func (b *builder) putTopic(t *Topic) {
	byName, byID := b.topics()
	byName[t.Name] = t
	byID[t.ID] = t
	b.touch(t.Name)
}

func (b *builder) touch(name string) {
	if b.touched == nil {
		b.touched = map[string]bool{}
	}
	b.touched[name] = true
}

// Apply returns the image after batch, committed at offset. Records that do
// not fit are skipped (see the package doc); skipped lists why, for logs.
func (im *Image) Apply(offset uint64, batch Batch) (next *Image, skipped []string) {
	c := *im
	b := &builder{im: &c}
	for _, r := range batch.Records {
		if why := b.apply(offset, r); why != "" {
			skipped = append(skipped, fmt.Sprintf("%s: %s", r.Type, why))
		}
	}
	c.Offset = offset
	c.updateAttention(im, b.touched, b.brokersCopied)
	return &c, skipped
}

func (b *builder) apply(offset uint64, r Record) string {
	im := b.im
	switch r.Type {
	case Noop:
	case SetFeatures:
		im.Features = maps.Clone(r.Features)
		if im.Features == nil {
			im.Features = map[string]int16{}
		}
	case SetClusterID:
		if im.ClusterID != "" {
			return "cluster id already set"
		}
		if r.ClusterID == "" {
			return "empty cluster id"
		}
		im.ClusterID = r.ClusterID
	case RegisterBroker:
		if r.Broker == nil {
			return "no broker"
		}
		reg := *r.Broker
		reg.Endpoints = slices.Clone(reg.Endpoints)
		reg.Epoch = int64(offset)
		reg.Fenced = true
		b.brokers()[reg.ID] = &reg
	case FenceBroker, UnfenceBroker:
		old, ok := im.Brokers[r.BrokerID]
		if !ok || old.Epoch != r.Epoch {
			return fmt.Sprintf("broker %d epoch %d not registered", r.BrokerID, r.Epoch)
		}
		nb := *old
		nb.Fenced = r.Type == FenceBroker
		b.brokers()[r.BrokerID] = &nb
	case UnregisterBroker:
		if _, ok := im.Brokers[r.BrokerID]; !ok {
			return fmt.Sprintf("broker %d not registered", r.BrokerID)
		}
		delete(b.brokers(), r.BrokerID)
	case CreateTopic:
		if r.Topic == nil || r.Topic.Name == "" || len(r.Topic.Partitions) == 0 {
			return "incomplete topic"
		}
		if _, ok := im.Topics[r.Topic.Name]; ok {
			return fmt.Sprintf("topic %q exists", r.Topic.Name)
		}
		if _, ok := im.TopicsByID[r.Topic.ID]; ok {
			return "topic id in use"
		}
		b.putTopic(r.Topic.clone())
	case RemoveTopic:
		t, ok := im.Topics[r.TopicName]
		if !ok || t.ID != r.TopicID {
			return fmt.Sprintf("topic %q with that id not found", r.TopicName)
		}
		byName, byID := b.topics()
		delete(byName, t.Name)
		delete(byID, t.ID)
		b.touch(t.Name)
	case AddPartitions:
		t, ok := im.Topics[r.TopicName]
		if !ok || t.ID != r.TopicID || len(r.Partitions) == 0 {
			return fmt.Sprintf("topic %q with that id not found", r.TopicName)
		}
		nt := b.ownTopic(t)
		for _, p := range r.Partitions {
			nt.Partitions = append(nt.Partitions, p.clone())
		}
		b.putTopic(nt)
	case ChangePartition:
		t, ok := im.Topics[r.TopicName]
		if !ok || t.ID != r.TopicID || r.Change == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			return fmt.Sprintf("partition %s-%d not found", r.TopicName, r.Partition)
		}
		if r.Change.PartitionEpoch <= t.Partitions[r.Partition].PartitionEpoch ||
			r.Change.LeaderEpoch < t.Partitions[r.Partition].LeaderEpoch {
			return fmt.Sprintf("stale change of %s-%d", r.TopicName, r.Partition)
		}
		nt := b.ownTopic(t)
		nt.Partitions[r.Partition] = r.Change.clone()
		b.putTopic(nt)
	case SetTopicConfigs:
		t, ok := im.Topics[r.TopicName]
		if !ok || t.ID != r.TopicID {
			return fmt.Sprintf("topic %q with that id not found", r.TopicName)
		}
		nt := b.ownTopic(t)
		nt.Configs = maps.Clone(r.Configs)
		b.putTopic(nt)
	case SetBrokerConfigs:
		if !b.cfgCopied {
			im.BrokerConfigs = maps.Clone(im.BrokerConfigs)
			b.cfgCopied = true
		}
		if len(r.Configs) == 0 {
			delete(im.BrokerConfigs, r.Entity)
		} else {
			im.BrokerConfigs[r.Entity] = maps.Clone(r.Configs)
		}
	case SetQuorumNode:
		return b.setQuorumNode(r)
	case UnregisterController:
		return b.unregisterController(r)
	case SetGroupConfigs:
		return b.applyGroupConfigs(r)
	case ProducerIDs:
		if r.FirstProducerID != im.NextProducerID || r.ProducerIDCount <= 0 {
			return fmt.Sprintf("producer id block at %d, next is %d", r.FirstProducerID, im.NextProducerID)
		}
		im.NextProducerID = r.FirstProducerID + r.ProducerIDCount
	default:
		if why, ok := b.applySecurity(r); ok {
			return why
		}
		return "unknown record type"
	}
	return ""
}

package metadata

import (
	"encoding/json"
	"fmt"
)

// RecordType names a metadata record.
type RecordType string

// The record types. Each is one state change; a Batch of them is committed
// as one quorum entry and applied atomically.
const (
	// Noop changes nothing: a new controller commits one to learn that its
	// image holds every record committed before its term.
	Noop RecordType = "noop"
	// SetFeatures replaces the finalized feature levels (UpdateFeatures;
	// names and levels as internal/features defines them).
	SetFeatures RecordType = "features"
	// SetClusterID records the cluster id (the first one wins).
	SetClusterID RecordType = "cluster-id"
	// RegisterBroker adds or replaces a broker's registration; its epoch is
	// the offset of the record; it starts fenced.
	RegisterBroker RecordType = "register-broker"
	// FenceBroker and UnfenceBroker change a registration of the given
	// epoch (ignored for any other epoch).
	FenceBroker   RecordType = "fence-broker"
	UnfenceBroker RecordType = "unfence-broker"
	// UnregisterBroker removes a broker (decommissioning).
	UnregisterBroker RecordType = "unregister-broker"
	// CreateTopic adds a topic with its partitions.
	CreateTopic RecordType = "create-topic"
	// RemoveTopic deletes a topic (by name and id).
	RemoveTopic RecordType = "remove-topic"
	// AddPartitions appends partitions to a topic.
	AddPartitions RecordType = "add-partitions"
	// ChangePartition sets a partition's leader, in-sync set and replicas
	// (all of them, as decided); refused when the partition epoch is not
	// newer.
	ChangePartition RecordType = "change-partition"
	// SetTopicConfigs replaces a topic's config overrides.
	SetTopicConfigs RecordType = "topic-configs"
	// SetBrokerConfigs replaces the dynamic configs of one broker (Entity
	// "1") or of every broker (Entity "").
	SetBrokerConfigs RecordType = "broker-configs"
	// ProducerIDs hands a block of producer ids to a broker.
	ProducerIDs RecordType = "producer-ids"
	// SetClientQuotas, AddACLs and RemoveACLs: image_security.go.
	SetClientQuotas RecordType = "client-quotas"
	// SetGroupConfigs replaces the configs of one group (Entity, the group
	// id) with Configs, as IncrementalAlterConfigs on a GROUP resource sets
	// them (image_groups.go).
	SetGroupConfigs RecordType = "group-configs"
	AddACLs         RecordType = "add-acls"
	RemoveACLs      RecordType = "remove-acls"
	// SetScramCredential: image_scram.go.
	SetScramCredential RecordType = "scram-credential"
	// SetQuorumNode records where a member of the metadata quorum (voter
	// or observer, BrokerID) listens for peer traffic (Address) and
	// whether it has the controller role (Controller).
	SetQuorumNode RecordType = "quorum-node"
	// UnregisterController removes the registration of a controller
	// (BrokerID) that is not a voter: its quorum-node record
	// (UnregisterController, key 94; image_quorum.go).
	UnregisterController RecordType = "unregister-controller"
)

// Record is one metadata change. Only the fields of its Type are set.
type Record struct {
	Type RecordType `json:"type"`
	// Features: SetFeatures (every finalized level, 0 included).
	Features map[string]int16 `json:"features,omitempty"`

	ClusterID string              `json:"cluster_id,omitempty"`
	Broker    *BrokerRegistration `json:"broker,omitempty"`
	BrokerID  int32               `json:"broker_id,omitempty"`
	Epoch     int64               `json:"epoch,omitempty"`
	Topic     *Topic              `json:"topic,omitempty"`
	TopicName string              `json:"topic_name,omitempty"`
	TopicID   ID                  `json:"topic_id,omitempty"`
	// Partitions: the new partitions of AddPartitions.
	Partitions []Partition `json:"partitions,omitempty"`
	// Partition and Change: ChangePartition.
	Partition int32      `json:"partition,omitempty"`
	Change    *Partition `json:"change,omitempty"`
	// Entity and Configs: SetTopicConfigs (Entity unused), SetBrokerConfigs and
	// SetGroupConfigs.
	Entity  string            `json:"entity,omitempty"`
	Configs map[string]string `json:"configs,omitempty"`
	// FirstProducerID and ProducerIDCount: ProducerIDs.
	FirstProducerID int64 `json:"first_producer_id,omitempty"`
	ProducerIDCount int64 `json:"producer_id_count,omitempty"`
	// QuotaEntity and Quotas: SetClientQuotas; ACLs: AddACLs, RemoveACLs.
	QuotaEntity string             `json:"quota_entity,omitempty"`
	Quotas      map[string]float64 `json:"quotas,omitempty"`
	ACLs        []ACL              `json:"acls,omitempty"`
	// User, Mechanism and Scram: SetScramCredential (Scram nil deletes).
	User      string           `json:"user,omitempty"`
	Mechanism string           `json:"mechanism,omitempty"`
	Scram     *ScramCredential `json:"scram,omitempty"`
	// Address and Controller: SetQuorumNode; Listeners and KRaftVersions
	// too when a voter told its endpoints (UpdateRaftVoter, image_quorum.go).
	Address       string           `json:"address,omitempty"`
	Controller    bool             `json:"controller,omitempty"`
	Listeners     []QuorumListener `json:"listeners,omitempty"`
	KRaftVersions *VersionRange    `json:"kraft_versions,omitempty"`
}

// Batch is what one quorum entry carries: records applied all together.
type Batch struct {
	Records []Record `json:"records"`
}

// DecodeBatch parses entry bytes.
func DecodeBatch(data []byte) (Batch, error) {
	var b Batch
	if err := json.Unmarshal(data, &b); err != nil {
		return Batch{}, fmt.Errorf("metadata: decoding batch: %w", err)
	}
	return b, nil
}

package metadata

import (
	"fmt"
	"maps"
	"net"
	"slices"
)

// QuorumNode is a member of the metadata quorum as the metadata knows it:
// where its peer (controller) listener is, and whether it has the
// controller role (it may then be promoted to a voter). Which members vote
// is raft's configuration, not the metadata's.
type QuorumNode struct {
	Address    string `json:"address"`
	Controller bool   `json:"controller,omitempty"`
	// Listeners are the endpoints a voter last told the quorum of
	// (UpdateRaftVoter, KIP-853), the first being its peer listener;
	// empty until it did.
	Listeners []QuorumListener `json:"listeners,omitempty"`
	// KRaftVersions is the range of kraft.version the voter supports, as
	// it told (nil until it did).
	KRaftVersions *VersionRange `json:"kraft_versions,omitempty"`
}

// QuorumListener is one named endpoint of a quorum member.
type QuorumListener struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port uint16 `json:"port"`
}

// VersionRange is a supported feature range, both ends included.
type VersionRange struct {
	Min int16 `json:"min"`
	Max int16 `json:"max"`
}

// Equal reports whether q and o say the same.
func (q QuorumNode) Equal(o QuorumNode) bool {
	if q.Address != o.Address || q.Controller != o.Controller || !slices.Equal(q.Listeners, o.Listeners) {
		return false
	}
	if (q.KRaftVersions == nil) != (o.KRaftVersions == nil) {
		return false
	}
	return q.KRaftVersions == nil || *q.KRaftVersions == *o.KRaftVersions
}

func (b *builder) setQuorumNode(r Record) string {
	if r.BrokerID <= 0 {
		return "node id must be at least 1"
	}
	if _, _, err := net.SplitHostPort(r.Address); err != nil {
		return "bad address: " + err.Error()
	}
	seen := map[string]bool{}
	for _, l := range r.Listeners {
		if l.Name == "" || l.Host == "" || l.Port == 0 {
			return fmt.Sprintf("bad listener %+v: it needs a name, a host and a port", l)
		}
		if seen[l.Name] {
			return "listener " + l.Name + " listed twice"
		}
		seen[l.Name] = true
	}
	if v := r.KRaftVersions; v != nil && (v.Min < 0 || v.Max < v.Min) {
		return fmt.Sprintf("bad kraft.version range %d-%d", v.Min, v.Max)
	}
	im := b.im
	im.QuorumNodes = maps.Clone(im.QuorumNodes)
	if im.QuorumNodes == nil {
		im.QuorumNodes = map[int32]QuorumNode{}
	}
	q := QuorumNode{Address: r.Address, Controller: r.Controller, Listeners: slices.Clone(r.Listeners)}
	if r.KRaftVersions != nil {
		v := *r.KRaftVersions
		q.KRaftVersions = &v
	}
	im.QuorumNodes[r.BrokerID] = q
	return ""
}

// QuorumNode returns what the metadata knows of quorum member id.
func (im *Image) QuorumNode(id int32) (QuorumNode, bool) {
	q, ok := im.QuorumNodes[id]
	return q, ok
}

// unregisterController removes the registration of controller
// r.BrokerID (its quorum-node record), as Kafka's UnregisterControllerRecord
// does; a node not registered with the controller role is refused.
func (b *builder) unregisterController(r Record) string {
	q, ok := b.im.QuorumNodes[r.BrokerID]
	if !ok || !q.Controller {
		return fmt.Sprintf("no controller registration found for id %d", r.BrokerID)
	}
	im := b.im
	im.QuorumNodes = maps.Clone(im.QuorumNodes)
	delete(im.QuorumNodes, r.BrokerID)
	return ""
}

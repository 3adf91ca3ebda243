package metadata

import (
	"maps"
	"net"
)

// QuorumNode is a member of the metadata quorum as the metadata knows it:
// where its peer (controller) listener is, and whether it has the
// controller role (it may then be promoted to a voter). Which members vote
// is raft's configuration, not the metadata's.
type QuorumNode struct {
	Address    string `json:"address"`
	Controller bool   `json:"controller,omitempty"`
}

func (b *builder) setQuorumNode(r Record) string {
	if r.BrokerID <= 0 {
		return "node id must be at least 1"
	}
	if _, _, err := net.SplitHostPort(r.Address); err != nil {
		return "bad address: " + err.Error()
	}
	im := b.im
	im.QuorumNodes = maps.Clone(im.QuorumNodes)
	if im.QuorumNodes == nil {
		im.QuorumNodes = map[int32]QuorumNode{}
	}
	im.QuorumNodes[r.BrokerID] = QuorumNode{Address: r.Address, Controller: r.Controller}
	return ""
}

// QuorumNode returns what the metadata knows of quorum member id.
func (im *Image) QuorumNode(id int32) (QuorumNode, bool) {
	q, ok := im.QuorumNodes[id]
	return q, ok
}

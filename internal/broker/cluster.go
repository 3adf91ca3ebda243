package broker

import (
	"github.com/sluice-broker/sluice/internal/wire"
)

// The cluster as handlers describe it to clients: which brokers there are,
// at which address of the listener a request came in on, and which one is
// the controller. Handlers ask these functions, never b.nodeID; on a single
// node the answer is this broker alone (the metadata image answers once
// there is a quorum).

// clusterBroker is one live broker as clients see it.
type clusterBroker struct {
	id   int32
	host string
	port int32
	rack *string
}

// self is this broker's node id.
func (b *Broker) self() int32 { return b.replicas.Self() }

// liveBrokers lists the brokers clients may talk to, with their endpoints
// on the listener r came in on, sorted by node id.
func (b *Broker) liveBrokers(r *wire.Request) []clusterBroker {
	host, port := b.endpoint(r)
	me := clusterBroker{id: b.self(), host: host, port: port}
	if rack := b.cfg.Raw["broker.rack"]; rack != "" {
		me.rack = &rack
	}
	return []clusterBroker{me}
}

// brokerByID returns the live broker id with its endpoint for r's listener.
func (b *Broker) brokerByID(r *wire.Request, id int32) (clusterBroker, bool) {
	for _, br := range b.liveBrokers(r) {
		if br.id == id {
			return br, true
		}
	}
	return clusterBroker{}, false
}

// isLiveBroker reports whether id names a registered, unfenced broker.
func (b *Broker) isLiveBroker(id int32) bool {
	_, ok := b.brokerByID(nil, id)
	return ok
}

// controllerID is the node id clients are told is the active controller.
func (b *Broker) controllerID() int32 { return b.self() }

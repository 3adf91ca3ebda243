package broker

import (
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/wire"
)

// The cluster as handlers describe it to clients: which brokers there are,
// at which address of the listener a request came in on, and which one is
// the controller. Handlers ask these functions, never b.nodeID; on a single
// node the answer is this broker alone, on a cluster node the metadata
// image.

// clusterBroker is one live broker as clients see it.
type clusterBroker struct {
	id   int32
	host string
	port int32
	rack *string
}

// self is this broker's node id.
func (b *Broker) self() int32 { return b.replicas.Self() }

// image is the metadata image of a cluster node, nil on a single node: the
// image the local state follows (published), so that clients are never told
// of brokers, leaders or topics from a log still being replayed at start;
// empty until the node has caught up with its registration.
func (b *Broker) image() *metadata.Image {
	if b.cluster == nil {
		return nil
	}
	if im := b.cluster.pubImage.Load(); im != nil {
		return im
	}
	return notCaughtUpImage
}

// notCaughtUpImage is what a cluster node knows before it has caught up.
var notCaughtUpImage = metadata.Empty()

// liveBrokers lists the brokers clients may talk to, with their endpoints
// on the listener r came in on, sorted by node id. On a cluster node these
// are the registered, unfenced brokers that have that listener.
func (b *Broker) liveBrokers(r *wire.Request) []clusterBroker {
	if im := b.image(); im != nil {
		name := b.listenerName(r)
		var out []clusterBroker
		for _, reg := range im.LiveBrokers() {
			ep, ok := reg.Endpoint(name)
			if !ok {
				continue
			}
			cb := clusterBroker{id: reg.ID, host: ep.Host, port: ep.Port}
			if reg.Rack != "" {
				rack := reg.Rack
				cb.rack = &rack
			}
			out = append(out, cb)
		}
		return out
	}
	host, port := b.endpoint(r)
	me := clusterBroker{id: b.self(), host: host, port: port}
	if rack := b.cfg.Raw["broker.rack"]; rack != "" {
		me.rack = &rack
	}
	return []clusterBroker{me}
}

// listenerName is the listener r came in on (the first listener for nil).
func (b *Broker) listenerName(r *wire.Request) string {
	if l := b.listener(r); l != nil {
		return l.name
	}
	for _, l := range b.listenerOrder() {
		if l.host == b.host && l.port == b.port {
			return l.name
		}
	}
	return ""
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
	if im := b.image(); im != nil {
		return im.IsLive(id)
	}
	_, ok := b.brokerByID(nil, id)
	return ok
}

// controllerID is the node id clients are told is the active controller:
// on a cluster node the quorum's leader (-1 while none is known).
func (b *Broker) controllerID() int32 {
	if b.cluster != nil {
		l := b.cluster.node.Leader()
		if l == 0 {
			return -1
		}
		if im := b.cluster.store.Image(); !im.IsLive(int32(l)) {
			// The controller is not a broker clients can reach (a
			// controller-only node): as Kafka does, name a live broker,
			// which forwards what needs the controller.
			if im.IsLive(b.self()) {
				return b.self()
			}
			if live := im.LiveBrokers(); len(live) > 0 {
				return live[0].ID
			}
		}
		return int32(l)
	}
	return b.self()
}

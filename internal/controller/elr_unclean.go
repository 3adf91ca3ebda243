package controller

import (
	"slices"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// Unclean shutdowns and eligible leader replicas (KIP-966). A broker
// registers with the broker epoch its last clean shutdown recorded in its
// clean-shutdown marker (-1 after a crash or power loss). When that is not
// the epoch of its registration in the metadata, its logs may have lost
// records it had acknowledged (what was not fsynced), so it no longer
// qualifies as a clean leader: with eligible.leader.replicas.version 1 the
// controller removes it from every partition's ELR (it joins the last
// known ELR there, for an operator's manual recovery), as Kafka's
// controller does on such a registration. It rejoins in-sync sets by
// catching up, as any replica.

// uncleanShutdown reports whether req, a registration of a broker
// registered as old, follows an unclean shutdown (and the feature is on).
// A registration that does not say (nil: an older node) is taken as clean.
func uncleanShutdown(im *metadata.Image, old *metadata.BrokerRegistration, req RegisterRequest) bool {
	return elrEnabled(im) && req.PreviousBrokerEpoch != nil && *req.PreviousBrokerEpoch != old.Epoch
}

// afterUncleanShutdown returns recs with a change of every partition whose
// ELR holds broker id (those recs does not change already), and marks id
// for withELR, which drops it from the ELR of every partition change of the
// batch (c.mu held; the caller clears c.elrUnclean after the commit).
func (c *Controller) afterUncleanShutdown(im *metadata.Image, id int32, recs []metadata.Record) []metadata.Record {
	type key struct {
		topic string
		part  int32
	}
	var changed map[key]bool // built at the first partition whose ELR holds id
	n := 0
	for _, t := range im.SortedTopics() {
		for i, p := range t.Partitions {
			if !slices.Contains(p.ELR, id) {
				continue
			}
			if changed == nil {
				changed = map[key]bool{}
				for _, r := range recs {
					if r.Type == metadata.ChangePartition {
						changed[key{r.TopicName, r.Partition}] = true
					}
				}
			}
			if changed[key{t.Name, int32(i)}] {
				continue
			}
			np := p
			np.PartitionEpoch++ // withELR drops id from its ELR
			recs = append(recs, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
				Partition: int32(i), Change: &np})
			n++
		}
	}
	c.elrUnclean = map[int32]bool{id: true}
	c.cfg.Logger.Warn("controller: broker registered after an unclean shutdown; it leaves the eligible leader replicas (KIP-966)",
		"broker", id, "partitions", n)
	return recs
}

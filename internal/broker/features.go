package broker

import (
	"github.com/sluice-broker/sluice/internal/features"
)

// finalizedFeatures returns the finalized feature levels and their epoch:
// on a cluster node the metadata image's (the epoch is the image's offset,
// as Kafka reports the offset of its metadata image), on a single node the
// data directory's features.json.
func (b *Broker) finalizedFeatures() (features.Levels, int64) {
	if im := b.image(); im != nil {
		return features.Finalized(im.Features, im.ClusterID != ""), int64(im.Offset)
	}
	if b.features == nil { // brokers built by tests without Server.Start
		return features.Defaults(), 0
	}
	return b.features.Get()
}

// featureLevel returns the finalized level of one feature.
func (b *Broker) featureLevel(name string) int16 {
	if im := b.image(); im != nil {
		return features.Finalized(im.Features, im.ClusterID != "").Level(name)
	}
	if b.features == nil {
		return features.Defaults().Level(name)
	}
	l, _ := b.features.Get()
	return l.Level(name)
}

// transactionV2 reports whether transaction.version 2 (KIP-890 part 2) is
// finalized.
func (b *Broker) transactionV2() bool { return b.featureLevel(features.TransactionVersion) >= 2 }

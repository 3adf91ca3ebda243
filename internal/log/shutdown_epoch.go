package log

import (
	"encoding/json"
	"fmt"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// The broker epoch in the clean-shutdown marker, as Kafka's
// .kafka_cleanshutdown file holds it ({"version":0,"brokerEpoch":N}). A
// cluster node registers with the epoch its last clean shutdown recorded
// (PreviousBrokerEpoch): the controller takes a registration whose previous
// epoch is not the broker's last one for an unclean shutdown, after which
// the broker's logs may have lost what it had acknowledged, and removes it
// from the eligible leader replicas (KIP-966).

// readMarkerEpoch returns the brokerEpoch of the marker at path (-1 when
// it has none or cannot be read).
func readMarkerEpoch(fsys vfs.FS, path string) int64 {
	data, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return -1
	}
	var m struct {
		BrokerEpoch *int64 `json:"brokerEpoch"`
	}
	if json.Unmarshal(data, &m) != nil || m.BrokerEpoch == nil {
		return -1
	}
	return *m.BrokerEpoch
}

// PreviousBrokerEpoch is the broker epoch the clean-shutdown marker found at
// OpenManager recorded: -1 after an unclean shutdown (no marker) or when the
// clean shutdown recorded none.
func (m *Manager) PreviousBrokerEpoch() int64 { return m.prevEpoch }

// BrokerEpoch is the epoch SetBrokerEpoch last set (-1: none yet).
func (m *Manager) BrokerEpoch() int64 { return m.brokerEpoch.Load() }

// SetBrokerEpoch sets the broker epoch the clean-shutdown marker written by
// Close records (the broker's registration; -1, the default, for none).
func (m *Manager) SetBrokerEpoch(epoch int64) { m.brokerEpoch.Store(epoch) }

func (m *Manager) markerContent() []byte {
	return fmt.Appendf(nil, `{"version":0,"brokerEpoch":%d}`, m.brokerEpoch.Load())
}

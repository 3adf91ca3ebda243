package broker

// Upgrading a single-node data directory in place into a one-voter cluster.
//
// A directory written by a single-node broker holds topics (ids, configs,
// partition logs), committed offsets and transaction state in
// __consumer_offsets and __transaction_state, producer state beside the
// logs, and SCRAM credentials. Started as a cluster node whose
// controller.quorum.voters names only itself, it keeps all of it: before it
// serves anything, the node (the quorum's only voter, so its leader) commits
// one batch that records its cluster id and every local topic as it is —
// same topic id, configs and partition count, each partition led by this
// node alone at leader epoch 0, as the single node served it. The logs are
// not touched. From then on it is an ordinary one-voter cluster that can
// grow (AddRaftVoter, docs/cluster.md).
//
// A marker file makes this crash-safe: it is written before the quorum
// directory is created and removed once the batch is committed, and a start
// that finds it imports again (topics already in the metadata are skipped).
// A multi-voter cluster never imports: its other voters' metadata would
// not know these topics.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"context"

	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// upgradeMarker names the marker file in the data directory.
const upgradeMarker = "quorum-upgrade.json"

// planUpgrade decides, before the quorum starts, whether this start
// imports the single node's topics. It refuses a data directory with topics
// and no quorum directory on any node but the only voter of a new cluster.
func (c *clusterNode) planUpgrade(fsys vfs.FS, quorumDir string) (bool, error) {
	b := c.b
	marker := filepath.Join(b.dataDir, upgradeMarker)
	if _, err := fsys.Stat(marker); err == nil {
		return true, nil // an import that did not finish
	}
	if _, err := fsys.Stat(quorumDir); err == nil {
		return false, nil
	}
	local := b.topics.List()
	if len(local) == 0 && !c.cfg.implicit {
		return false, nil // an implicit voter imports at least the cluster id (cluster_implicit.go)
	}
	_, voter := c.cfg.voters[uint64(c.cfg.nodeID)]
	if !voter || len(c.cfg.voters) != 1 {
		var user string
		for _, t := range local {
			if !strings.HasPrefix(t.Name, "__") {
				user = t.Name
				break
			}
		}
		if user == "" {
			return false, nil // only internal topics: nothing a client made
		}
		return false, fmt.Errorf("sluice: %s holds topics of a single-node broker (%s, …); it can become a cluster node only as the "+
			"only voter of a new cluster (controller.quorum.voters=%d@host:port), which keeps its data, and grow from there "+
			"(docs/cluster.md); other nodes start on empty data directories", b.dataDir, user, c.cfg.nodeID)
	}
	doc, _ := json.Marshal(map[string]any{"node_id": c.cfg.nodeID, "topics": len(local)})
	if err := vfs.WriteFileAtomic(fsys, marker, doc, 0o644); err != nil {
		return false, fmt.Errorf("sluice: %s: %w", marker, err)
	}
	return true, nil
}

// importSingleNode commits the local topics and cluster id to the new
// quorum (this node must become its leader) and removes the marker.
func (c *clusterNode) importSingleNode(fsys vfs.FS) error {
	self := c.cfg.nodeID
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for c.node.Leader() != uint64(self) {
		select {
		case <-ctx.Done():
			return errors.New("sluice: upgrading a single-node data directory: this node did not become the quorum's leader in 30 s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	im := c.store.Image()
	var recs []metadata.Record
	if im.ClusterID == "" && c.b.clusterID != "" {
		recs = append(recs, metadata.Record{Type: metadata.SetClusterID, ClusterID: c.b.clusterID})
		if im.Features == nil && c.b.features != nil { // the node's finalized levels carry over
			levels, _ := c.b.features.Get()
			recs = append(recs, metadata.Record{Type: metadata.SetFeatures, Features: levels})
		}
		recs = append(recs, c.bootRecords...) // sluice format --add-scram (cluster_peer_scram.go)
	}
	var names []string
	for _, t := range c.b.topics.List() {
		if _, ok := im.Topics[t.Name]; ok {
			continue
		}
		mt := &metadata.Topic{Name: t.Name, ID: metadata.ID(t.ID), Configs: maps.Clone(t.Configs)}
		for range t.Partitions {
			mt.Partitions = append(mt.Partitions, metadata.Partition{Replicas: []int32{self}, ISR: []int32{self}, Leader: self})
		}
		recs = append(recs, metadata.Record{Type: metadata.CreateTopic, Topic: mt})
		names = append(names, t.Name)
	}
	recs = append(recs, scramImportRecords(im, c.b.scram.Snapshot())...) // cluster_scram.go
	// ACLs, quotas, broker and group configs, features: cluster_upgrade_state.go.
	state, err := c.singleNodeStateRecords(fsys, im)
	if err != nil {
		return fmt.Errorf("sluice: upgrading a single-node data directory: %w", err)
	}
	recs = append(recs, state...)
	if len(recs) > 0 {
		if err := c.node.Propose(ctx, metadata.Batch{Records: recs}.Encode()); err != nil {
			return fmt.Errorf("sluice: upgrading a single-node data directory: %w", err)
		}
	}
	after := c.store.Image()
	for _, n := range names {
		if it, ok := after.Topics[n]; !ok || topics.ID(it.ID) != mustTopic(c.b, n).ID {
			return fmt.Errorf("sluice: upgrading a single-node data directory: topic %s was not recorded as it is", n)
		}
	}
	if err := fsys.Remove(filepath.Join(c.b.dataDir, upgradeMarker)); err != nil {
		return fmt.Errorf("sluice: %w", err)
	}
	if err := fsys.SyncDir(c.b.dataDir); err != nil {
		return fmt.Errorf("sluice: %w", err)
	}
	// A new data directory brings only its cluster id and feature levels.
	fresh := len(names) == 0
	for _, r := range recs {
		if r.Type != metadata.SetClusterID && r.Type != metadata.SetFeatures {
			fresh = false
		}
	}
	if c.cfg.implicit && fresh {
		c.logger.Info("started a one-voter metadata quorum on this data directory", "cluster_id", after.ClusterID)
	} else {
		c.logger.Info("upgraded a single-node data directory in place into a one-voter cluster", "cluster_id", after.ClusterID,
			"topics_imported", len(names))
	}
	return nil
}

func mustTopic(b *Broker, name string) *topics.Topic {
	t, _ := b.topics.Get(name)
	if t == nil {
		return &topics.Topic{}
	}
	return t
}

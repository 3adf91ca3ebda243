package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// singleNodeStateRecords are the records that carry what a single node
// keeps in files of its data directory, besides topics and SCRAM
// credentials, into the metadata of the cluster it becomes (cluster_upgrade.go):
// ACLs (acls.json), client quotas (client-quotas.json), dynamic broker configs
// (broker-configs.json), group configs and finalized feature levels
// (features.json). What the metadata holds already is left alone (an import
// that runs again after a crash). The files stay, unused on a cluster node.
func (c *clusterNode) singleNodeStateRecords(fsys vfs.FS, im *metadata.Image) ([]metadata.Record, error) {
	b := c.b
	var recs []metadata.Record
	exists := func(name string) bool {
		_, err := fsys.Stat(filepath.Join(b.dataDir, name))
		return err == nil
	}
	if exists(authz.ACLsFile) && len(im.ACLs) == 0 {
		_, acls, err := authz.OpenFileStore(fsys, b.dataDir)
		if err != nil {
			return nil, err
		}
		if len(acls) > 0 {
			recs = append(recs, metadata.Record{Type: metadata.AddACLs, ACLs: toMetadataACLs(acls)})
		}
	}
	readDoc := func(name string, doc any) (bool, error) {
		data, err := vfs.ReadFile(fsys, filepath.Join(b.dataDir, name))
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if err := json.Unmarshal(data, doc); err != nil {
			return false, fmt.Errorf("%s is corrupt: %w", name, err)
		}
		return true, nil
	}
	var qd quotasDoc
	if ok, err := readDoc(quotasFile, &qd); err != nil {
		return nil, err
	} else if ok {
		for _, ent := range slices.Sorted(maps.Keys(qd.Quotas)) {
			if _, there := im.ClientQuotas[ent]; !there && len(qd.Quotas[ent]) > 0 {
				recs = append(recs, metadata.Record{Type: metadata.SetClientQuotas, QuotaEntity: ent, Quotas: qd.Quotas[ent]})
			}
		}
	}
	var bd brokerConfigsDoc
	if ok, err := readDoc(brokerConfigsFile, &bd); err != nil {
		return nil, err
	} else if ok {
		for _, ent := range slices.Sorted(maps.Keys(bd.Configs)) {
			if _, there := im.BrokerConfigs[ent]; !there && len(bd.Configs[ent]) > 0 {
				recs = append(recs, metadata.Record{Type: metadata.SetBrokerConfigs, Entity: ent, Configs: bd.Configs[ent]})
			}
		}
	}
	if b.shares != nil { // loaded from the data directory at start (share_group_configs.go)
		gcs := b.shares.AllGroupConfigs()
		for _, g := range slices.Sorted(maps.Keys(gcs)) {
			if _, there := im.GroupConfigs[g]; !there && len(gcs[g]) > 0 {
				recs = append(recs, metadata.Record{Type: metadata.SetGroupConfigs, Entity: g, Configs: gcs[g]})
			}
		}
	}
	if exists(features.FileName) && len(im.Features) == 0 && b.features != nil {
		levels, _ := b.features.Get()
		recs = append(recs, metadata.Record{Type: metadata.SetFeatures, Features: levels})
	}
	return recs, nil
}

package broker

import (
	"context"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"time"
	"unsafe"

	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// On a cluster node, SCRAM credentials live in the cluster metadata
// (SetScramCredential records): AlterUserScramCredentials is validated by
// the broker that receives it, which derives the salt, iterations, stored
// key and server key (never keeping the password or the salted password),
// decided by the active controller and answered once this broker has
// published the change. Every node feeds its credential store from its
// image, so a user created through any node authenticates on every node.
// A single node keeps its scram-credentials.json.
//
// A cluster node whose data directory still holds a scram-credentials.json
// (a single node upgraded in place, or a cluster node of an earlier
// release, which kept credentials per node) imports it once: the
// credentials the metadata does not have yet (user and mechanism) are
// committed, then the file is renamed to scram-credentials.json.imported.
// A single node upgraded in place commits them with its topics, before it
// serves (importSingleNode).

// storeScram makes credential changes durable: through the controller on
// a cluster node, in the credential file on a single node.
func (b *Broker) storeScram(changes []security.ScramChange) error {
	if b.cluster == nil {
		return b.scram.Apply(changes)
	}
	if len(changes) == 0 {
		return nil
	}
	req := controller.AlterScramRequest{Changes: make([]controller.ScramChange, len(changes))}
	for i, ch := range changes {
		req.Changes[i] = controller.ScramChange{User: ch.User, Mechanism: ch.Mechanism.Name}
		if !ch.Delete {
			req.Changes[i].Credential = toMetadataScram(ch.Credential)
		}
	}
	if err := decideOffset(b.cluster, "alter-scram", b.cluster.ctrl.AlterScram, req); err != nil {
		return asBrokerError(err)
	}
	return nil
}

func toMetadataScram(c security.ScramCredential) *metadata.ScramCredential {
	return &metadata.ScramCredential{Salt: slices.Clone(c.Salt), StoredKey: slices.Clone(c.StoredKey),
		ServerKey: slices.Clone(c.ServerKey), Iterations: c.Iterations}
}

// scramPublished is the image credential map the store was last fed
// (publish goroutine only).
type scramPublished struct {
	done bool
	m    unsafe.Pointer
}

// publishScram feeds the credential store from the image when its
// credentials changed (each change makes a new map). Runs on the publish
// goroutine only.
func (b *Broker) publishScram(im *metadata.Image, last *scramPublished) {
	p := reflect.ValueOf(im.Scram).UnsafePointer()
	if b.scram == nil || last.done && last.m == p {
		return
	}
	users := make(map[string]map[string]security.ScramCredential, len(im.Scram))
	for u, mechs := range im.Scram {
		users[u] = make(map[string]security.ScramCredential, len(mechs))
		for name, c := range mechs {
			users[u][name] = security.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}
		}
	}
	b.scram.Replace(users)
	last.done, last.m = true, p
}

// scramImportRecords are the records adding the credentials of users (a
// credential file's) that im does not have yet, by user and mechanism.
func scramImportRecords(im *metadata.Image, users map[string]map[string]security.ScramCredential) []metadata.Record {
	var recs []metadata.Record
	for _, u := range slices.Sorted(maps.Keys(users)) {
		for _, mech := range slices.Sorted(maps.Keys(users[u])) {
			if _, ok := im.Scram[u][mech]; !ok {
				recs = append(recs, metadata.Record{Type: metadata.SetScramCredential, User: u, Mechanism: mech,
					Scram: toMetadataScram(users[u][mech])})
			}
		}
	}
	return recs
}

// importScramFile imports the node's credential file once (see above),
// retrying until it is done or ctx ends.
func (c *clusterNode) importScramFile(ctx context.Context, fsys vfs.FS) {
	dir := c.b.dataDir
	path := filepath.Join(dir, security.ScramCredentialsFile)
	file, err := security.OpenScramStore(fsys, dir)
	if err != nil {
		c.logger.Error("cannot read the SCRAM credential file to import it", "path", path, "err", err)
		return
	}
	users := file.Snapshot()
	if len(users) == 0 {
		return
	}
	for {
		var req controller.AlterScramRequest
		for _, r := range scramImportRecords(c.store.Image(), users) {
			req.Changes = append(req.Changes, controller.ScramChange{User: r.User, Mechanism: r.Mechanism, Credential: r.Scram})
		}
		if len(req.Changes) == 0 {
			if err := fsys.Rename(path, path+".imported"); err != nil {
				c.logger.Error("cannot rename the imported SCRAM credential file", "path", path, "err", err)
			} else if err := fsys.SyncDir(dir); err != nil {
				c.logger.Error("cannot sync the data directory", "err", err)
			}
			c.logger.Info("SCRAM credential file imported into the cluster metadata", "path", path, "users", len(users))
			return
		}
		var resp controller.OffsetResponse
		cctx, cancel := context.WithTimeout(ctx, adminTimeout)
		err := callController(cctx, c, "alter-scram", c.ctrl.AlterScram, req, &resp)
		if err == nil {
			_, err = c.store.WaitFor(cctx, resp.Offset)
		}
		cancel()
		if err != nil {
			c.logger.Debug("importing the SCRAM credential file: will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

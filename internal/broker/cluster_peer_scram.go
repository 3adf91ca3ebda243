package broker

// SCRAM on the controller listener (sasl.mechanism.controller.protocol
// SCRAM-SHA-256 or SCRAM-SHA-512), as Kafka's controllers take it.
//
// The controllers must authenticate each other before they agree on any
// metadata, so the credentials of a new cluster come from its data
// directories, as Kafka's `kafka-storage format --add-scram` puts them in
// the bootstrap records: `sluice format --add-scram
// 'SCRAM-SHA-512=[name=admin,password=admin-secret]'` (cmd/sluice/format.go)
// writes them to <data dir>/bootstrap/scram-credentials.json (the SCRAM
// store's own format: salt, stored and server keys, never the password).
//
//   - The first active controller of a new cluster commits them with the
//     cluster id, in the same entry (controller.Config.BootstrapRecords), so
//     they are SCRAM users of the cluster from then on, on every listener,
//     changed and deleted as any other (AlterUserScramCredentials).
//   - The controller listener checks a user against the node's metadata
//     image once it has a cluster id; before that (a new cluster forming,
//     nothing agreed yet) against the bootstrap credentials. Both are in
//     the same entry, so there is no moment in between.
//
// Every node of a new cluster is formatted with the same --add-scram (a
// node of an existing cluster that never had them can join only when its
// peers can log in to it, i.e. when it was formatted the same way), as
// with Kafka.

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// BootstrapDir is the directory of the data directory holding what
// `sluice format` prepared for a new cluster.
const BootstrapDir = log.BootstrapDir

// readBootstrapScram returns the bootstrap SCRAM credentials of dataDir
// (none when it was not formatted with --add-scram).
func readBootstrapScram(fsys vfs.FS, dataDir string) (map[string]map[string]security.ScramCredential, error) {
	st, err := security.OpenScramStore(fsys, filepath.Join(dataDir, BootstrapDir))
	if err != nil {
		return nil, fmt.Errorf("sluice: bootstrap SCRAM credentials: %w", err)
	}
	return st.Snapshot(), nil
}

// bootstrapScramRecords are the records a new cluster's first controller
// commits with its cluster id.
func bootstrapScramRecords(users map[string]map[string]security.ScramCredential) []metadata.Record {
	return scramImportRecords(metadata.Empty(), users) // cluster_scram.go
}

// controllerScram returns the credentials the controller listener checks
// now: the image's once it has a cluster id, else the bootstrap ones.
func controllerScram(store *metadata.Store, boot map[string]map[string]security.ScramCredential) *security.ScramStore {
	st := new(security.ScramStore)
	im := store.Image()
	if im.ClusterID == "" {
		st.Replace(boot)
		return st
	}
	users := make(map[string]map[string]security.ScramCredential, len(im.Scram))
	for u, mechs := range im.Scram {
		users[u] = make(map[string]security.ScramCredential, len(mechs))
		for name, c := range mechs {
			users[u][name] = security.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}
		}
	}
	st.Replace(users)
	return st
}

// scramPeerMechanism is the client side of SCRAM on the controller
// listener (franz-go's SCRAM client, RFC 5802).
type scramPeerMechanism struct {
	mech sasl.Mechanism
}

func newScramPeerMechanism(name, user, pass string) peer.SASLMechanism {
	a := scram.Auth{User: user, Pass: pass}
	if name == security.MechScramSHA256 {
		return scramPeerMechanism{a.AsSha256Mechanism()}
	}
	return scramPeerMechanism{a.AsSha512Mechanism()}
}

func (m scramPeerMechanism) Name() string { return m.mech.Name() }

func (m scramPeerMechanism) Start(ctx context.Context) ([]byte, func([]byte) (bool, []byte, error), error) {
	sess, first, err := m.mech.Authenticate(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	return first, sess.Challenge, nil
}

// BootstrapScram is one credential for `sluice format --add-scram`.
type BootstrapScram struct {
	Mechanism  string // SCRAM-SHA-256 or SCRAM-SHA-512
	User       string
	Password   string
	Iterations int // 0: 4096, as Kafka's format
}

// FormatBootstrapScram writes SCRAM credentials for a new cluster into
// dataDir (see above). It refuses a data directory that already holds a
// metadata log: its cluster exists, and takes new users through
// AlterUserScramCredentials (sluice user).
func FormatBootstrapScram(fsys vfs.FS, dataDir string, creds []BootstrapScram) error {
	if _, err := fsys.Stat(filepath.Join(dataDir, quorumDirName)); err == nil {
		return fmt.Errorf("%s already holds a metadata log: bootstrap credentials are for a new cluster only; "+
			"add users to a running cluster with sluice user create (AlterUserScramCredentials)", dataDir)
	}
	var changes []security.ScramChange
	for _, c := range creds {
		m, ok := security.ScramMechanismByName(c.Mechanism)
		if !ok {
			return fmt.Errorf("unknown SCRAM mechanism %q (SCRAM-SHA-256 or SCRAM-SHA-512)", c.Mechanism)
		}
		if c.User == "" || c.Password == "" {
			return fmt.Errorf("%s credential needs a name and a password", c.Mechanism)
		}
		it := c.Iterations
		if it == 0 {
			it = 4096
		}
		if it < security.ScramMinIterations || it > 16384 {
			return fmt.Errorf("%s iterations %d: must be between %d and 16384", c.Mechanism, it, security.ScramMinIterations)
		}
		salt := make([]byte, 32)
		rand.Read(salt)
		salted, err := m.SaltedPassword(c.Password, salt, it)
		if err != nil {
			return err
		}
		changes = append(changes, security.ScramChange{User: c.User, Mechanism: m, Credential: m.NewScramCredential(salt, salted, it)})
	}
	dir := filepath.Join(dataDir, BootstrapDir)
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	st, err := security.OpenScramStore(fsys, dir)
	if err != nil {
		return err
	}
	return st.Apply(changes)
}

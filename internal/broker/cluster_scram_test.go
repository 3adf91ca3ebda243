package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// On a cluster, SCRAM credentials are metadata records: a user created
// through one node (kadm sends it to the controller) is known to every node's credential store (which SASL
// SCRAM authenticates against), described by every node, kept across a
// restart, and deleted everywhere through any node. A node's credential
// file from before is imported once into the metadata. Restarts node 3,
// then runs afterRestart (TestClusterDynamicConfigsAndScram).
func checkClusterScram(t *testing.T, tc *testCluster, afterRestart func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n1, n2, n3 := tc.nodes[0].addr, tc.nodes[1].addr, tc.nodes[2].addr
	known := func(i int, user string, m security.ScramMechanism) bool {
		_, ok := tc.nodes[i].broker().scram.Lookup(user, m)
		return ok
	}

	res, err := nodeAdmin(t, n1).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("create users through node 1: %v %+v", err, res)
	}
	for i := range 3 {
		pollUntil(t, "every node to know alice and bob", func() bool {
			return known(i, "alice", security.ScramSHA256) && known(i, "bob", security.ScramSHA512)
		})
	}
	// The same credential everywhere: what node 1 derived from the password.
	c1, _ := tc.nodes[0].broker().scram.Lookup("alice", security.ScramSHA256)
	c3, _ := tc.nodes[2].broker().scram.Lookup("alice", security.ScramSHA256)
	if string(c1.StoredKey) != string(c3.StoredKey) || c3.Iterations != 4096 {
		t.Fatalf("node 3's credential differs: %+v vs %+v", c3, c1)
	}
	// Node 3 authenticates alice (the SASL/SCRAM exchange its listeners run
	// against its credential store); a wrong password fails.
	if err := scramLogin(tc.nodes[2].broker(), "alice", "alice-secret"); err != nil {
		t.Fatalf("alice on node 3: %v", err)
	}
	if err := scramLogin(tc.nodes[2].broker(), "alice", "wrong"); err == nil {
		t.Fatal("node 3 accepted a wrong password")
	}
	d, err := nodeAdmin(t, n3).DescribeUserSCRAMs(ctx, "bob")
	if err != nil || d["bob"].Err != nil || len(d["bob"].CredInfos) != 1 || d["bob"].CredInfos[0].Iterations != 8192 {
		t.Fatalf("describe through node 3: %v %+v", err, d)
	}
	// No credential file on a cluster node: the metadata holds them.
	if _, err := os.Stat(filepath.Join(tc.nodes[1].opts.DataDir, security.ScramCredentialsFile)); !os.IsNotExist(err) {
		t.Fatalf("node 2 wrote a credential file: %v", err)
	}

	// Deleted through node 2, gone from node 3.
	if res, err := nodeAdmin(t, n2).AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil); err != nil || res.Error() != nil {
		t.Fatalf("delete bob through node 2: %v %+v", err, res)
	}
	pollUntil(t, "node 3 to forget bob", func() bool { return !known(2, "bob", security.ScramSHA512) })

	// A node's credential file of an earlier release is imported once.
	tc.nodes[2].stop()
	dir := tc.nodes[2].opts.DataDir
	old, err := security.OpenScramStore(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	salted, err := security.ScramSHA256.SaltedPassword("carol-secret", []byte("salt"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Apply([]security.ScramChange{{User: "carol", Mechanism: security.ScramSHA256,
		Credential: security.ScramSHA256.NewScramCredential([]byte("salt"), salted, 4096)}}); err != nil {
		t.Fatal(err)
	}
	tc.nodes[2].start()
	pollUntil(t, "node 1 to know carol from node 3's file", func() bool { return known(0, "carol", security.ScramSHA256) })
	pollUntil(t, "node 3 to rename its imported file", func() bool {
		_, err := os.Stat(filepath.Join(dir, security.ScramCredentialsFile+".imported"))
		return err == nil
	})
	if err := scramLogin(tc.nodes[2].broker(), "alice", "alice-secret"); err != nil {
		t.Fatalf("alice on node 3 after its restart: %v", err)
	}
	if err := scramLogin(tc.nodes[1].broker(), "carol", "carol-secret"); err != nil {
		t.Fatalf("carol (imported from node 3's file) on node 2: %v", err)
	}
	afterRestart()
}

// scramLogin runs a SCRAM-SHA-256 exchange of a client with user and
// password against b's credential store, as b's SASL listeners do.
func scramLogin(b *Broker, user, password string) error {
	sc := &security.SASLConfig{Mechanisms: []string{security.MechScramSHA256}}
	s, _ := sc.NewSession(security.MechScramSHA256, b.scram)
	cs, msg, err := scram.Auth{User: user, Pass: password}.AsSha256Mechanism().Authenticate(context.Background(), "node")
	if err != nil {
		return err
	}
	for range 4 {
		reply, done, err := s.Step(msg)
		if err != nil {
			return err
		}
		cdone, next, err := cs.Challenge(reply)
		if err != nil {
			return fmt.Errorf("client rejected the server: %w", err)
		}
		if done {
			if !cdone {
				return errors.New("server done before the client")
			}
			return nil
		}
		msg = next
	}
	return errors.New("exchange did not finish")
}

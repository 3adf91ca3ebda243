package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-broker/sluice/internal/security/sectest"
)

// The real binary with a server.properties holding a PLAINTEXT and a
// SASL_SSL listener (PEM key store, PLAIN users in a JAAS config written
// over several lines, SCRAM): each listener advertises itself, PLAIN and
// SCRAM logins work over TLS, and a SCRAM user made with
// AlterUserScramCredentials survives a restart.
func TestBinaryServesTwoListeners(t *testing.T) {
	bin := sluiceBinary(t)
	dir := t.TempDir()
	ca := sectest.NewCA(t, "ca")
	keystore := ca.Server(t, "broker").WritePEM(t, dir, "broker.pem")
	plainAddr, saslAddr := freeAddr(t), freeAddr(t)
	props := fmt.Sprintf(`# two listeners
listeners=PLAINTEXT://%s,SASL_SSL://%s
advertised.listeners=PLAINTEXT://%s,SASL_SSL://%s
offsets.topic.num.partitions=1
ssl.keystore.type=PEM
ssl.keystore.location=%s
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="admin" password="admin-secret" \
    user_admin="admin-secret" \
    user_alice="alice-secret";
`, plainAddr, saslAddr, plainAddr, saslAddr, keystore)
	cfgFile := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(cfgFile, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() (*exec.Cmd, *syncBuf) {
		logs := &syncBuf{}
		cmd := exec.Command(bin, "--config", cfgFile, "--data-dir", filepath.Join(dir, "data"), "--metrics-listen", "")
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(logs.String(), "sluice started") {
			if time.Now().After(deadline) {
				t.Fatalf("no startup line:\n%s", logs)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return cmd, logs
	}
	stop := func(cmd *exec.Cmd, logs *syncBuf) {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit: %v\n%s", err, logs)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(addr string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(1), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	tlsOpt := kgo.DialTLSConfig(sectest.ClientTLS(ca, nil))
	advertised := func(cl *kgo.Client) (string, error) {
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			return "", err
		}
		return net.JoinHostPort(resp.Brokers[0].Host, strconv.Itoa(int(resp.Brokers[0].Port))), nil
	}

	cmd, logs := start()
	if !strings.Contains(logs.String(), "advertised_listeners=") {
		t.Errorf("startup line does not list the listeners:\n%s", logs)
	}
	plainCl := client(plainAddr)
	if got, err := advertised(plainCl); err != nil || got != plainAddr {
		t.Fatalf("PLAINTEXT advertises %s (%v), want %s", got, err, plainAddr)
	}
	alice := client(saslAddr, tlsOpt, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if got, err := advertised(alice); err != nil || got != saslAddr {
		t.Fatalf("SASL_SSL advertises %s (%v), want %s", got, err, saslAddr)
	}
	if _, err := kadm.NewClient(plainCl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	carol := func() error {
		_, err := advertised(client(saslAddr, tlsOpt, kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism())))
		return err
	}
	if err := carol(); err != nil {
		t.Fatalf("SCRAM login: %v", err)
	}
	// The admin command logs in to the SASL_SSL listener with a Kafka client properties file.
	caPEM := ca.WritePEM(t, dir, "ca.pem")
	clientProps := filepath.Join(dir, "client.properties")
	if err := os.WriteFile(clientProps, []byte("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"carol\" password=\"carol-secret\";\n"+
		"ssl.truststore.type=PEM\nssl.truststore.location="+caPEM+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "topics", "create", "over-sasl", "--bootstrap", saslAddr, "--command-config", clientProps).CombinedOutput(); err != nil {
		t.Fatalf("sluice topics create over SASL_SSL: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "topics", "list", "--bootstrap", saslAddr, "--command-config", clientProps).CombinedOutput(); err != nil || !strings.Contains(string(out), "over-sasl") {
		t.Fatalf("sluice topics list over SASL_SSL: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "topics", "list", "--bootstrap", saslAddr).CombinedOutput(); err == nil {
		t.Fatalf("sluice topics list without credentials on the SASL_SSL listener succeeded:\n%s", out)
	}
	if _, err := advertised(client(saslAddr, tlsOpt, kgo.SASL(plain.Auth{User: "alice", Pass: "bad"}.AsMechanism()))); err == nil {
		t.Fatal("a wrong PLAIN password was accepted")
	}
	stop(cmd, logs)

	cmd, logs = start()
	if err := carol(); err != nil {
		t.Fatalf("SCRAM login after restart: %v\n%s", err, logs)
	}
	stop(cmd, logs)
}

//go:build cgo

package goclients

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestConfluentSASLSSL: librdkafka creates a SCRAM-SHA-256 user with
// AlterUserScramCredentials on the PLAINTEXT listener, then produces and
// consumes over SASL_SSL with SCRAM (verifying the broker certificate
// against the test CA); a wrong password fails authentication.
func TestConfluentSASLSSL(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := func(listener string, extra kafka.ConfigMap) *kafka.ConfigMap {
		cm := kafka.ConfigMap{
			"bootstrap.servers":     sb.addr(listener),
			"client.id":             "sluice-confluent-sasl-test",
			"broker.address.family": "v4",
			"socket.timeout.ms":     10000,
			"log_level":             4,
		}
		for k, v := range extra {
			cm[k] = v
		}
		return &cm
	}
	sasl := func(user, pass string) kafka.ConfigMap {
		return kafka.ConfigMap{
			"security.protocol": "SASL_SSL",
			"sasl.mechanisms":   "SCRAM-SHA-256",
			"sasl.username":     user,
			"sasl.password":     pass,
			"ssl.ca.location":   sb.caFile,
		}
	}

	adm, err := kafka.NewAdminClient(base("PLAINTEXT", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	res, err := adm.AlterUserScramCredentials(ctx, []kafka.UserScramCredentialUpsertion{{
		User: "carol", ScramCredentialInfo: kafka.ScramCredentialInfo{Mechanism: kafka.ScramMechanismSHA256, Iterations: 4096},
		Password: []byte("carol-secret")}}, nil)
	if err != nil || res.Errors["carol"].Code() != kafka.ErrNoError {
		t.Fatalf("alter: %v %+v", err, res)
	}
	desc, err := adm.DescribeUserScramCredentials(ctx, []string{"carol"})
	if err != nil || len(desc.Descriptions["carol"].ScramCredentialInfos) != 1 {
		t.Fatalf("describe: %v %+v", err, desc)
	}

	topic := uniqueName("confluent-sasl-ssl")
	sadm, err := kafka.NewAdminClient(base("SASL_SSL", sasl("carol", "carol-secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer sadm.Close()
	tr, err := sadm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}})
	if err != nil || tr[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("create topic over SASL_SSL: %v %+v", err, tr)
	}
	p, err := kafka.NewProducer(base("SASL_SSL", sasl("carol", "carol-secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, []*kafka.Message{{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("secret")}})

	c, err := kafka.NewConsumer(base("SASL_SSL", func() kafka.ConfigMap {
		m := sasl("carol", "carol-secret")
		m["group.id"] = uniqueName("g")
		m["auto.offset.reset"] = "earliest"
		return m
	}()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	if msgs := readMessages(t, c, 1, 15*time.Second); string(msgs[0].Value) != "secret" {
		t.Fatalf("consumed %q", msgs[0].Value)
	}

	// A wrong password: the admin request fails with an authentication error.
	bad, err := kafka.NewAdminClient(base("SASL_SSL", sasl("carol", "wrong")))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	bctx, bcancel := context.WithTimeout(ctx, 10*time.Second)
	defer bcancel()
	_, err = bad.DescribeCluster(bctx)
	if err == nil {
		t.Fatal("wrong password: request succeeded")
	}
	if kerr, ok := err.(kafka.Error); ok && kerr.Code() != kafka.ErrAuthentication && kerr.Code() != kafka.ErrTimedOut {
		t.Logf("wrong password error: %v", err)
	}
	waitFor(t, 10*time.Second, "failed authentication logged", func() error {
		if !strings.Contains(sb.logs.String(), "failed authentication") {
			return errors.New("not yet")
		}
		return nil
	})
}

package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller's and the quorum's Kafka APIs (and the ZooKeeper-era
// inter-broker ones) are not served on client listeners: not advertised,
// and a client sending one has its connection closed without an answer (a
// Kafka broker's answer to an API its listener does not serve), with the
// authorizer on too; the partition it named is unchanged.
func TestAuthzControllerAPIsNotServed(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := ab.as("admin")
	if res, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "ctl"); err != nil || res.Err != nil {
		t.Fatalf("create ctl: %v %v", err, res.Err)
	}
	before := send[*kmsg.MetadataResponse](t, admin, metadataOf("ctl"))

	keys := []kmsg.Request{
		kmsg.NewPtrLeaderAndISRRequest(), kmsg.NewPtrStopReplicaRequest(), kmsg.NewPtrUpdateMetadataRequest(),
		kmsg.NewPtrControlledShutdownRequest(), kmsg.NewPtrVoteRequest(), kmsg.NewPtrBeginQuorumEpochRequest(),
		kmsg.NewPtrEndQuorumEpochRequest(), kmsg.NewPtrEnvelopeRequest(), kmsg.NewPtrFetchSnapshotRequest(),
		kmsg.NewPtrBrokerRegistrationRequest(), kmsg.NewPtrBrokerHeartbeatRequest(), kmsg.NewPtrAllocateProducerIDsRequest(),
		kmsg.NewPtrControllerRegistrationRequest(),
	}
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.BrokerID, ap.BrokerEpoch = 1, 1
	apt := kmsg.NewAlterPartitionRequestTopic()
	apt.Topic, apt.TopicID = "ctl", before.Topics[0].TopicID
	app := kmsg.NewAlterPartitionRequestTopicPartition()
	app.LeaderEpoch, app.PartitionEpoch = before.Topics[0].Partitions[0].LeaderEpoch, 0
	apt.Partitions = append(apt.Partitions, app) // an empty in-sync set
	ap.Topics = append(ap.Topics, apt)
	keys = append(keys, ap)

	apis := send[*kmsg.ApiVersionsResponse](t, admin, kmsg.NewPtrApiVersionsRequest())
	advertised := map[int16]bool{}
	for _, k := range apis.ApiKeys {
		advertised[k.ApiKey] = true
	}
	addr := ab.srv.ListenerAddr("PLAINTEXT").String()
	for _, req := range keys {
		name := kmsg.NameForKey(req.Key())
		if advertised[req.Key()] {
			t.Errorf("%s is advertised on a client listener", name)
		}
		req.SetVersion(0)
		if req.Key() == int16(kmsg.AlterPartition) {
			req.SetVersion(2) // topic ids
		}
		if err := rawRequestClosed(addr, req); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	after := send[*kmsg.MetadataResponse](t, admin, metadataOf("ctl"))
	bp, ap0 := before.Topics[0].Partitions[0], after.Topics[0].Partitions[0]
	if bp.Leader != ap0.Leader || bp.LeaderEpoch != ap0.LeaderEpoch || len(ap0.ISR) != len(bp.ISR) || len(ap0.ISR) == 0 {
		t.Fatalf("partition changed: before %+v, after %+v", bp, ap0)
	}
}

// rawRequestClosed sends req on a new connection to addr and wants the
// connection closed without a response.
func rawRequestClosed(addr string, req kmsg.Request) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("intruder")).AppendRequest(nil, req, 7)
	if _, err := c.Write(frame); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	_, err = io.ReadFull(c, size[:])
	switch {
	case err == nil:
		return fmt.Errorf("answered (%d bytes)", binary.BigEndian.Uint32(size[:]))
	case errors.Is(err, io.EOF) || isReset(err):
		return nil
	default:
		return err
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

func metadataOf(topic string) *kmsg.MetadataRequest {
	m := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	m.Topics = append(m.Topics, rt)
	return m
}

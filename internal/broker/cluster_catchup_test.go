package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// A restarted node replays its metadata log before it has caught up with
// the cluster: meanwhile it must not tell clients of the brokers (old
// addresses) and leaders of that replay. Here it never catches up (no
// quorum): its last replayed image lists itself live at its old port.
func TestClusterNoStaleMetadataBeforeCatchUp(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	waitImages(t, tc, "three live brokers", func(im *metadata.Image) bool { return len(im.LiveBrokers()) == 3 })
	oldAddr := tc.nodes[0].addr
	tc.nodes[1].stop()
	tc.nodes[2].stop()
	dir := tc.nodes[0].opts.DataDir
	tc.nodes[0].stop() // no quorum: its own fencing is not committed
	tc.nodes[0].opts.DataDir = dir
	tc.nodes[0].start()
	n := tc.nodes[0]
	waitFor(t, "node 1 to replay its metadata log", func() bool { return n.broker().cluster.store.Image().Offset > 0 })
	if _, ok := n.broker().cluster.store.Image().Brokers[1]; !ok {
		t.Fatal("the replayed image has no broker 1")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range resp.Brokers {
		t.Errorf("a node that has not caught up lists broker %d at %s:%d (old address %s)", b.NodeID, b.Host, b.Port, oldAddr)
	}
	if len(resp.Topics) != 0 {
		t.Errorf("a node that has not caught up lists topics %+v", resp.Topics)
	}
}

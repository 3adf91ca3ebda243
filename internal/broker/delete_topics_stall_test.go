package broker

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// removeGateFS blocks the first removal of a file under a "-delete" directory (a
// deleted partition's data) until released.
type removeGateFS struct {
	vfs.FS
	once     sync.Once
	entered  chan struct{}
	release  chan struct{}
	released sync.Once
}

func newRemoveGateFS() *removeGateFS {
	return &removeGateFS{FS: vfs.OS(), entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *removeGateFS) Remove(name string) error {
	if strings.Contains(name, "-delete") {
		first := false
		g.once.Do(func() { first = true })
		if first {
			close(g.entered)
			<-g.release
		}
	}
	return g.FS.Remove(name)
}

func (g *removeGateFS) open() { g.released.Do(func() { close(g.release) }) }

// A DeleteTopics held half-way through removing a partition's data does not
// stall other clients: their Metadata (auto-creating a topic) and Produce
// complete before it is released. Deletion stays synchronous: DeleteTopics
// answers only once the data is gone.
func TestDeleteTopicsDoesNotStallOtherClients(t *testing.T) {
	gate := newRemoveGateFS()
	tb := startTestBroker(t, testOptions{FS: gate})
	t.Cleanup(gate.open) // runs before the broker stops: never leave it blocked
	createTestTopic(t, tb, "doomed", 2)
	createTestTopic(t, tb, "live", 1)
	produceN(t, tb.client(), "doomed", 0, 3)

	deleted := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := tb.admin().DeleteTopics(ctx, "doomed")
		if err == nil {
			err = r.Error()
		}
		deleted <- err
	}()
	select {
	case <-gate.entered:
	case err := <-deleted:
		t.Fatalf("DeleteTopics finished without removing data through the hook: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("DeleteTopics never reached the removal of the data")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	other := tb.client(kgo.AllowAutoTopicCreation())
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("auto-created")
	md.Topics = []kmsg.MetadataRequestTopic{mt}
	md.AllowAutoTopicCreation = true
	resp, err := md.RequestWith(ctx, other)
	if err != nil {
		t.Fatalf("metadata while DeleteTopics is held: %v", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("auto-create while DeleteTopics is held: %+v", resp.Topics)
	}
	for _, topic := range []string{"live", "auto-created"} {
		if err := other.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce to %s while DeleteTopics is held: %v", topic, err)
		}
	}
	// The name is free at once: re-create it while the old data is being removed.
	createTestTopic(t, tb, "doomed", 1)
	if err := other.ProduceSync(ctx, &kgo.Record{Topic: "doomed", Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatalf("produce to the re-created topic: %v", err)
	}
	select {
	case err := <-deleted:
		t.Fatalf("DeleteTopics answered before its data was removed: %v", err)
	default:
	}

	gate.open()
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatalf("DeleteTopics: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("DeleteTopics did not finish after release")
	}
	// Removing the old data left the re-created topic alone.
	if l := tb.broker().logs.Get("doomed", 0); l == nil || l.LogEndOffset() != 1 {
		t.Fatalf("re-created topic after the old one's data was removed: %v", l)
	}
	if l := tb.broker().logs.Get("doomed", 1); l != nil {
		t.Fatal("partition 1 of the deleted topic is still open")
	}
	tb.restart()
	if l := tb.broker().logs.Get("doomed", 0); l == nil || l.LogEndOffset() != 1 {
		t.Fatalf("re-created topic after a restart: %v", l)
	}
	ents, err := os.ReadDir(tb.opts.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-delete") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

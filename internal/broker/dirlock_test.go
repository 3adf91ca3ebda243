package broker

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/config"
)

// A second broker on a data directory in use refuses to start, touches
// nothing, and the directory is free again once the first one stops.
func TestDataDirectoryLock(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	second := func() error {
		cfg, err := config.NewBroker(map[string]string{"offsets.topic.num.partitions": "1"})
		if err != nil {
			t.Fatal(err)
		}
		srv := NewServer(Options{Listen: "127.0.0.1:0", DataDir: tb.opts.DataDir, Config: cfg,
			Logger: slog.New(slog.DiscardHandler)})
		if err := srv.Start(); err != nil {
			return err
		}
		return srv.Close()
	}
	err := second()
	if err == nil || !strings.Contains(err.Error(), "in use by another broker") {
		t.Fatalf("second broker on the same data directory: %v, want an in-use error", err)
	}
	if _, err := os.Stat(filepath.Join(tb.opts.DataDir, ".kafka_cleanshutdown")); err == nil {
		t.Fatal("the refused broker left a clean-shutdown marker")
	}
	tb.stop()
	if err := second(); err != nil {
		t.Fatalf("after the first broker stopped: %v", err)
	}
}

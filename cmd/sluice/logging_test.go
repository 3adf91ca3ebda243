package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/config"
)

// TestNewLogger: flags (or their variables) win over sluice.log.level and
// sluice.log.format from the config file; bad values are refused.
func TestNewLogger(t *testing.T) {
	fileCfg, err := config.NewBroker(map[string]string{"sluice.log.level": "warn", "sluice.log.format": "json"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	l, err := newLogger(settings{}, fileCfg, &buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.HasPrefix(out, `{"time":`) {
		t.Errorf("config file settings: %q", out)
	}
	buf.Reset()
	l, err = newLogger(settings{logLevel: "debug", logFormat: "text"}, fileCfg, &buf)
	if err != nil || !l.Enabled(context.Background(), slog.LevelDebug) {
		t.Fatalf("flags: %v", err)
	}
	l.Info("x")
	if !strings.HasPrefix(buf.String(), "time=") {
		t.Errorf("--log-format text: %q", buf.String())
	}
	if l, _ := newLogger(settings{}, config.DefaultBroker(), &buf); l.Enabled(context.Background(), slog.LevelDebug) || !l.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("default level is not info")
	}
	for _, s := range []settings{{logLevel: "loud"}, {logFormat: "xml"}} {
		if _, err := newLogger(s, config.DefaultBroker(), &buf); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if _, err := config.NewBroker(map[string]string{"sluice.log.format": "xml"}); err == nil {
		t.Error("sluice.log.format=xml accepted")
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--log-level", "loud", "--data-dir", t.TempDir()}, env(nil), &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "--log-level") {
		t.Errorf("run --log-level loud: %d %q", code, stderr.String())
	}
}

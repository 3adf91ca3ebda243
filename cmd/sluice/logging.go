package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/sluice-broker/sluice/internal/config"
)

// newLogger builds the broker's logger: --log-level / --log-format (or
// their variables), else sluice.log.level / sluice.log.format from the
// config file, else info and text.
func newLogger(s settings, cfg *config.Broker, w io.Writer) (*slog.Logger, error) {
	level, format := s.logLevel, s.logFormat
	if level == "" {
		level = cfg.Raw["sluice.log.level"]
	}
	if format == "" {
		format = cfg.Raw["sluice.log.format"]
	}
	var lv slog.Level
	switch strings.ToLower(level) {
	case "debug", "trace":
		lv = slog.LevelDebug
	case "", "info":
		lv = slog.LevelInfo
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

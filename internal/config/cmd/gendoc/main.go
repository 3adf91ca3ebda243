// Command gendoc writes docs/configuration.md from the config tables in
// internal/config. Run it through `go generate ./internal/config`.
package main

import (
	"flag"
	"log/slog"
	"os"

	"github.com/sluice-broker/sluice/internal/config"
)

func main() {
	out := flag.String("o", "docs/configuration.md", "output file")
	flag.Parse()
	if err := os.WriteFile(*out, config.Markdown(), 0o644); err != nil {
		slog.Error("writing configuration reference", "file", *out, "err", err)
		os.Exit(1)
	}
}

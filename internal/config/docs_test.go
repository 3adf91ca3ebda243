package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestDocsInSync fails when docs/configuration.md differs from what the
// generator produces. Fix with: go generate ./internal/config
func TestDocsInSync(t *testing.T) {
	committed, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatalf("reading docs/configuration.md: %v (run: go generate ./internal/config)", err)
	}
	if !bytes.Equal(committed, Markdown()) {
		t.Fatal("docs/configuration.md is stale; run: go generate ./internal/config")
	}
}

func TestMarkdownMentionsEveryConfig(t *testing.T) {
	md := string(Markdown())
	for _, d := range append(TopicDefs(), BrokerDefs()...) {
		if !strings.Contains(md, "### "+d.Name+"\n") {
			t.Errorf("%s has no section", d.Name)
		}
	}
	if strings.Contains(md, "\t") {
		t.Error("tab in generated markdown")
	}
}

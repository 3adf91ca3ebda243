#!/usr/bin/env bash
# Runs every test Sluice has. Installs what the tests need first, so it works on a fresh machine.
# Usage: scripts/test-all.sh
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== dependencies"
go mod download

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 -timeout 15m ./...

echo "== fault checker (scripts/chaos.sh --quick; docs/reliability.md)"
scripts/chaos.sh --quick

echo "== client conformance"
scripts/test-clients.sh

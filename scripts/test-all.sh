#!/usr/bin/env bash
# Runs every test Sluice has. Installs what the tests need first, so it works on a fresh machine.
# Usage: scripts/test-all.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# Every Go module in the tree: the broker (the root, go.mod) and the tooling that has its own
# go.mod so that the broker's module never requires it (bench/: kfake; test/clients/goclients/:
# sarama, segmentio/kafka-go, confluent-kafka-go).
mapfile -t modules < <({ git ls-files 'go.mod' '*/go.mod' 2>/dev/null ||
  find . -name go.mod -not -path '*/node_modules/*' -not -path '*/.cache/*'; } | xargs -n1 dirname | LC_ALL=C sort)
if [ "${modules[0]:-}" != . ]; then
  echo "test-all.sh: no go.mod at the repository root (found: ${modules[*]:-none})" >&2; exit 1
fi
echo "== Go modules: ${modules[*]}"

echo "== dependencies"
for m in "${modules[@]}"; do
  (cd "$m" && go mod download)
done

# Headless Chromium for the web console's browser test (internal/console/chromium_test.go), which
# skips without it; here it must run, so SLUICE_REQUIRE_CHROMIUM makes a missing browser a failure.
echo "== chromium (Debian package, for the web console's browser test)"
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else return 1; fi; }
  export DEBIAN_FRONTEND=noninteractive
  apt_log=$(mktemp)
  if ! { as_root apt-get install -y -q chromium >"$apt_log" 2>&1 ||
         { as_root apt-get update -q >>"$apt_log" 2>&1 && as_root apt-get install -y -q chromium >>"$apt_log" 2>&1; }; }; then
    tail -n 5 "$apt_log"; rm -f "$apt_log"
    echo "test-all.sh: cannot install chromium (apt-get install -y chromium, as root)" >&2; exit 1
  fi
  rm -f "$apt_log"
fi
export SLUICE_REQUIRE_CHROMIUM=1

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

for m in "${modules[@]}"; do
  echo "== go vet ($m)"
  (cd "$m" && go vet ./...)
done

for m in "${modules[@]}"; do
  echo "== go test ($m)"
  (cd "$m" && go test -count=1 -timeout 15m ./...)
done

echo "== fault checker (scripts/chaos.sh --quick; docs/reliability.md)"
scripts/chaos.sh --quick

echo "== client conformance"
scripts/test-clients.sh

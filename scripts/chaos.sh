#!/usr/bin/env bash
# Sluice's fault checker (docs/reliability.md): builds the sluice binary and
# test/chaos's sluice-chaos, runs the checker's own unit tests (hand-made
# histories with every anomaly), then a run against real sluice processes on
# 127.0.0.1 with faults injected on a seeded schedule.
#
# Usage: scripts/chaos.sh [--quick] [--time 300s] [--seed N] [--faults kill,pause] [--nodes 1] ...
#        (every flag goes to sluice-chaos; sluice-chaos --help lists them)
# The last line is "N operations, F faults, A anomalies"; the exit status is 0
# only when faults were injected and no anomaly was found. The run directory
# (node data and logs, history.jsonl, summary.txt) is kept when the run fails
# or CHAOS_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-chaos.XXXXXX")
pid=""
cleanup() {
  # sluice-chaos stops its nodes itself (process groups, parent-death signal);
  # this only makes sure sluice-chaos is gone too.
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

echo "== chaos: build sluice and sluice-chaos"
go build -o "$work/sluice" ./cmd/sluice
(cd test/chaos && go build -o "$work/sluice-chaos" ./cmd/sluice-chaos)

echo "== chaos: gofmt, go vet and unit tests of the checker (test/chaos)"
unformatted=$(cd test/chaos && gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
(cd test/chaos && go vet ./... && go test -count=1 ./...)

echo "== chaos: run ($*)"
set +e
"$work/sluice-chaos" --bin "$work/sluice" --dir "$work/run" "$@" &
pid=$!
wait "$pid"
status=$?
pid=""
set -e
if [ "$status" -eq 0 ] && [ "${CHAOS_KEEP:-0}" != 1 ]; then
  rm -rf "$work"
else
  echo "chaos: run directory kept: $work/run (history.jsonl, summary.txt, node*/node.log)"
fi
exit "$status"

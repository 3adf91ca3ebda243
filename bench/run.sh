#!/usr/bin/env bash
# One command for the Sluice benchmark harness (issue #7): builds the harness
# and runs it against Sluice (this tree), Apache Kafka 4.x (from Maven
# Central, cached in bench/.cache) and franz-go's kfake. Every argument is
# passed on; see `bench/run.sh --help` and bench/README.md.
#
#   bench/run.sh --quick     # a few minutes, smoke numbers
#   bench/run.sh             # full run (~15 min); rewrites the harness part of docs/performance.md
#
# Needs Go, a JDK 17+ (`java`) and Maven (`mvn`) for the Apache Kafka target:
#   apt-get install -y openjdk-17-jre-headless maven
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in go java mvn; do
	if ! command -v "$tool" >/dev/null; then
		echo "bench/run.sh: $tool not found (apt-get install -y openjdk-17-jre-headless maven; Go from go.dev)" >&2
		exit 1
	fi
done
mkdir -p bench/.cache/bin
# The harness is its own Go module (bench/go.mod); it builds cmd/sluice from the root module itself.
go -C bench build -o .cache/bin/compare ./cmd/compare
# exec, so that a signal reaches the harness itself, which stops the brokers.
exec bench/.cache/bin/compare "$@"

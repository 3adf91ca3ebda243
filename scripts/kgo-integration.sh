#!/usr/bin/env bash
# franz-go's own integration tests (package pkg/kgo of github.com/twmb/franz-go, at the version in
# go.mod) against a Sluice this script builds and starts: one node, or a cluster of three nodes (the
# layout of `sluice dev cluster`, every node a broker and a controller) at replication factor 1, or 3
# with --rf 3. Every node also has a SCRAM-SHA-256 and an OAUTHBEARER listener for the SASL tests. Not
# part of scripts/test-all.sh or CI (it takes a few minutes); its results are recorded by hand in
# docs/cluster.md.
#
# The franz-go source comes from the Go module cache (`go mod download`, which keeps the *_test.go
# files); nothing else is fetched. The copy, the test binary, the broker logs and data live in a
# temporary directory, removed at the end unless --keep or a test failed (a failed run keeps it, so
# that a flaky failure's broker logs are there to read).
#
# Usage: scripts/kgo-integration.sh [--nodes 1|3] [--rf 1|3] [--records N] [--run REGEX] [--skip REGEX]
#                                   [--timeout DURATION] [--base-port PORT] [--keep]
#   --nodes      1 (default): a single node; 3: three nodes
#   --rf         replication factor of the tests' topics (KGO_TEST_RF, default 1); 3 needs --nodes 3,
#                whose server.properties then set default.replication.factor=3,
#                offsets.topic.replication.factor=3 and transaction.state.log.replication.factor=3
#   --records    KGO_TEST_RECORDS, records produced and consumed by the ETL tests (default 10000;
#                franz-go's own default is 500000). With 1000, TestShareGroupETL failed 5 runs in 6:
#                its solo reject consumer took every record (in about 20 ms) before the test's 50 ms
#                gate stopped it, leaving none to redeliver at level 1
#   --run        only the tests matching REGEX (go test -run)
#   --skip       leave out the tests matching REGEX (go test -skip), e.g. 'TestTxnEtl|TestGroupETL':
#                a test that outlives --timeout ends the whole run, and the tests not yet run count
#                as neither passed nor failed
#   --timeout    go test -timeout for the whole run (default 25m)
#   --base-port  PLAINTEXT port of the (first) node (default 29092; also PORT+10.. for the SCRAM
#                listeners, PORT+20.. for the OAUTHBEARER ones, on a cluster PORT+100.. for the
#                controllers and PORT+200.. for metrics, on a single node PORT+3 for metrics); keep
#                them below Linux's ephemeral range (32768-60999), where a client socket may hold one
#   --keep       keep the temporary directory (also kept, without --keep, when a test failed)
# The run ends with the line "kgo: N passed, N failed, N skipped" (top-level tests), preceded by the
# failed tests with the lines they logged; the exit status is non-zero when a test failed.
# KGO_LOG_LEVEL=debug shows the client's logs.
set -euo pipefail
cd "$(dirname "$0")/.."


nodes=1
rf=1
records=10000
run=""
skip=""
timeout=25m
base=29092
keep=""
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --rf) rf=$2; shift 2 ;;
    --records) records=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --base-port) base=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
case $nodes in 1|3) ;; *) echo "--nodes must be 1 or 3" >&2; exit 2 ;; esac
case $rf in 1) ;; 3) [ "$nodes" = 3 ] || { echo "--rf 3 needs --nodes 3" >&2; exit 2; } ;;
  *) echo "--rf must be 1 or 3" >&2; exit 2 ;; esac

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kgo.XXXXXX")
SLUICE_PID=""
NODE_PIDS=()
cleanup() {
  # The nodes are stopped by process id: SIGTERM, SIGKILL after 40 s.
  for pid in $SLUICE_PID "${NODE_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $SLUICE_PID "${NODE_PIDS[@]}"; do
    for _ in $(seq 400); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -n "$keep" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

version=$(go list -m -f '{{.Version}}' github.com/twmb/franz-go)
echo "== franz-go $version from the Go module cache"
dir=$(go mod download -json "github.com/twmb/franz-go@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$dir" ] || [ ! -f "$dir/pkg/kgo/helpers_test.go" ]; then
  echo "go mod download did not give franz-go's source with its tests (dir: '$dir')" >&2
  exit 1
fi
cp -r "$dir" "$WORK/franz-go"
chmod -R u+w "$WORK/franz-go"

echo "== building the kgo test binary and sluice"
(cd "$WORK/franz-go/pkg/kgo" && go test -c -o "$WORK/kgo.test" .)
go build -o "$WORK/sluice" ./cmd/sluice

# Every node has three listeners: PLAINTEXT (the tests' KGO_SEEDS) on BASE+i-1, SCRAM (SASL_PLAINTEXT,
# SCRAM-SHA-256; KGO_TEST_SCRAM_SEEDS) on BASE+10+i-1 and OAUTH (SASL_PLAINTEXT, OAUTHBEARER with the
# unsecured validator, which accepts the unsigned tokens TestOAuthAuth makes; KGO_TEST_OAUTH_SEEDS) on
# BASE+20+i-1. A cluster has the layout of `sluice dev cluster` (controllers on BASE+100+i-1, metrics
# on BASE+200+i-1) plus the replication factors; a single node has its metrics on BASE+3.
node_props() { # node_props I: the listeners and SASL settings of node I
  local i=$1
  cat <<PROPS
listeners=PLAINTEXT://127.0.0.1:$((base + i - 1)),SCRAM://127.0.0.1:$((base + 9 + i)),OAUTH://127.0.0.1:$((base + 19 + i))${2:+,CONTROLLER://127.0.0.1:$((base + 99 + i))}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SCRAM:SASL_PLAINTEXT,OAUTH:SASL_PLAINTEXT${2:+,CONTROLLER:PLAINTEXT}
inter.broker.listener.name=PLAINTEXT
listener.name.scram.sasl.enabled.mechanisms=SCRAM-SHA-256
listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler
listener.name.oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;
PROPS
}
seeds=""
scram_seeds=""
oauth_seeds=""
for i in $(seq "$nodes"); do
  seeds="$seeds${seeds:+,}127.0.0.1:$((base + i - 1))"
  scram_seeds="$scram_seeds${scram_seeds:+,}127.0.0.1:$((base + 9 + i))"
  oauth_seeds="$oauth_seeds${oauth_seeds:+,}127.0.0.1:$((base + 19 + i))"
done
if [ "$nodes" = 1 ]; then
  node_props 1 >"$WORK/server.properties"
  "$WORK/sluice" --config "$WORK/server.properties" --metrics-listen "127.0.0.1:$((base + 3))" \
    --data-dir "$WORK/data" >"$WORK/sluice.log" 2>&1 &
  SLUICE_PID=$!
  logs="$WORK/sluice.log"
else
  voters=""
  for i in 1 2 3; do voters="$voters${voters:+,}$i@127.0.0.1:$((base + 99 + i))"; done
  for i in 1 2 3; do
    nd=$WORK/cluster/node-$i
    mkdir -p "$nd"
    {
      node_props "$i" controller
      cat <<PROPS
node.id=$i
process.roles=broker,controller
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
log.dirs=$nd/data
default.replication.factor=$rf
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
PROPS
    } >"$nd/server.properties"
    "$WORK/sluice" --config "$nd/server.properties" --metrics-listen "127.0.0.1:$((base + 199 + i))" \
      >"$nd/sluice.log" 2>&1 &
    NODE_PIDS+=($!)
  done
  SLUICE_PID=${NODE_PIDS[0]}
  logs="$WORK/cluster/node-*/sluice.log"
fi

echo "== waiting for $nodes broker(s) at $seeds"
ready=""
for _ in $(seq 120); do
  if ! kill -0 "$SLUICE_PID" 2>/dev/null; then break; fi
  if "$WORK/sluice" cluster info --bootstrap "${seeds%%,*}" 2>/dev/null | grep -Eq "^BROKERS +$nodes\$"; then
    ready=1
    break
  fi
  sleep 0.5
done
if [ -z "$ready" ]; then
  echo "sluice did not come up with $nodes broker(s); its log:" >&2
  # shellcheck disable=SC2086
  tail -n 50 $logs >&2 2>/dev/null || true
  exit 1
fi

# The SCRAM user of TestSCRAMAuth, created through the PLAINTEXT listener (no authorizer); on a cluster
# it reaches the other nodes through the metadata log, so wait until every node's SCRAM listener
# takes it.
scram_user=kgo
scram_pass=kgo-secret
SLUICE_NEW_PASSWORD=$scram_pass "$WORK/sluice" user create "$scram_user" --mechanism SCRAM-SHA-256 \
  --bootstrap "${seeds%%,*}" >/dev/null
for addr in ${scram_seeds//,/ }; do
  ok=""
  for _ in $(seq 120); do
    if "$WORK/sluice" cluster info --bootstrap "$addr" --sasl-mechanism SCRAM-SHA-256 \
      --user "$scram_user" --password "$scram_pass" --timeout 5s >/dev/null 2>&1; then
      ok=1
      break
    fi
    sleep 0.5
  done
  if [ -z "$ok" ]; then
    echo "the SCRAM user $scram_user cannot log in at $addr" >&2
    exit 1
  fi
done

echo "== go test github.com/twmb/franz-go/pkg/kgo (KGO_TEST_RF=$rf, KGO_TEST_RECORDS=$records${run:+, -run $run}${skip:+, -skip $skip})"
args=(-test.v -test.count=1 -test.timeout "$timeout")
[ -n "$run" ] && args+=(-test.run "$run")
[ -n "$skip" ] && args+=(-test.skip "$skip")
status=0
(cd "$WORK/franz-go/pkg/kgo" &&
  KGO_SEEDS=$seeds KGO_TEST_SCRAM_SEEDS=$scram_seeds KGO_TEST_SCRAM=$scram_user:$scram_pass:256 \
    KGO_TEST_OAUTH_SEEDS=$oauth_seeds KGO_TEST_RF=$rf KGO_TEST_RECORDS=$records KGO_LOG_LEVEL=${KGO_LOG_LEVEL:-none} \
    "$WORK/kgo.test" "${args[@]}") >"$WORK/kgo.log" 2>&1 || status=$?

passed=$(grep -c '^--- PASS' "$WORK/kgo.log" || true)
failed=$(grep -c '^--- FAIL' "$WORK/kgo.log" || true)
skipped=$(grep -c '^--- SKIP' "$WORK/kgo.log" || true)
if grep -q '^panic: test timed out' "$WORK/kgo.log"; then
  echo "the run hit its timeout ($timeout); still running then:"
  sed -n '/^panic: test timed out/,/^$/p' "$WORK/kgo.log" | sed -n '2,30p'
  failed=$((failed + 1))
fi
if [ "$failed" -ne 0 ] || [ "$status" -ne 0 ]; then
  # Each failed test with the lines it logged: go test -v prints them indented after the test's
  # "=== RUN/CONT/NAME" line (before its "--- FAIL" line when it runs in parallel) or after "--- FAIL".
  awk '/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next } /^--- (PASS|FAIL|SKIP): / { cur = $3 }
       /^    / && cur != "" { out[cur] = out[cur] $0 "\n" }
       /^--- FAIL: / { failed[++n] = $0; name[n] = $3 }
       END { for (i = 1; i <= n; i++) printf "%s\n%s", failed[i], out[name[i]] }' "$WORK/kgo.log"
  keep=1
fi
echo "test output: $WORK/kgo.log; broker logs: $logs${keep:+}"
[ -z "$keep" ] && echo "(pass --keep to keep them)"
echo "kgo: $passed passed, $failed failed, $skipped skipped"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ]; then exit 1; fi

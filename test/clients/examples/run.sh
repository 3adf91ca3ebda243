#!/usr/bin/env bash
# Runs examples/compacted-topics/ in every language against the broker under test. Each example is
# recorded twice in the results: example.compacted-topics (create, produce two versions of user-42
# and a tombstone for user-7, read all three) and example.compaction (after the cleaner, user-42=v2
# first at offset 1) — the latter is skipped unless SLUICE_CLIENTS_COMPACTION=1.
# Needs from scripts/test-clients.sh: SLUICE_HARNESS, SLUICE_CLIENTS_VENV, SLUICE_CLIENTS_JAVA_CP,
# SLUICE_EXAMPLE_GO (a built examples/compacted-topics/go).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
ex=$root/examples/compacted-topics
# shellcheck source=../lib.sh
. "$here/../lib.sh"
SUITE_RESULTS_FILE=$SLUICE_RESULTS_DIR/examples.jsonl
NEEDS="CreateTopics Produce Fetch ListOffsets"

compaction=${SLUICE_CLIENTS_COMPACTION:-0}
export WAIT_SECONDS=${WAIT_SECONDS:-45}
if [ "$compaction" = 1 ]; then unset SKIP_COMPACTION; else export SKIP_COMPACTION=1; fi

# example CLIENT EXTRA-APIS COMMAND...: run one example (topic name appended) and record its outcome.
example() {
  local client=$1 extra=$2 topic="ex-$1-$SLUICE_RUN_ID" missing start rc out detail
  shift 2
  # shellcheck disable=SC2086
  missing=$(missing_apis $NEEDS $extra)
  if [ -n "$missing" ]; then
    record "$client" compacted-topics-walkthrough example.compacted-topics skip "broker does not advertise $missing" 0
    record "$client" compacted-topics-compaction example.compaction skip "broker does not advertise $missing" 0
    return 0
  fi
  echo "-- $client: $*"
  start=$(now_ms)
  out=$(mktemp)
  set +e
  timeout $(( WAIT_SECONDS + 90 )) "$@" "$SLUICE_BOOTSTRAP" "$topic" >"$out" 2>&1
  rc=$?
  set -e
  sed 's/^/    /' "$out"
  detail="$(grep -v '^[[:space:]]*$' "$out" | grep -i 'error' | tail -n 1 || true)"
  [ -n "$detail" ] || detail=$(grep -v '^[[:space:]]*$' "$out" | tail -n 1 || true)
  detail="$detail (exit $rc)"
  rm -f "$out"
  local ms=$(( $(now_ms) - start ))
  case $rc in
    0|3) record "$client" compacted-topics-walkthrough example.compacted-topics pass "" $ms ;;
    *) record "$client" compacted-topics-walkthrough example.compacted-topics fail "$detail" $ms ;;
  esac
  if [ "$compaction" != 1 ]; then
    record "$client" compacted-topics-compaction example.compaction skip "compaction check off (--compaction)" 0
  elif [ $rc -eq 0 ]; then
    record "$client" compacted-topics-compaction example.compaction pass "" $ms
  else
    record "$client" compacted-topics-compaction example.compaction fail "$detail" $ms
  fi
}

# kcat has no admin API: the suite creates the topic first, as the example's comment tells a user to.
# shellcheck disable=SC2016
kcat_example=(bash -c '"$SLUICE_HARNESS" create-topic -bootstrap "$1" -topic "$2" \
  -config cleanup.policy=compact -config segment.ms=1000 -config min.cleanable.dirty.ratio=0.01 &&
  bash "$0" "$1" "$2"' "$ex/kcat/walkthrough.sh")

example go "InitProducerID" "$SLUICE_EXAMPLE_GO"
example python "InitProducerID" "$SLUICE_CLIENTS_VENV/bin/python" "$ex/python/walkthrough.py"
example java "InitProducerID" java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$SLUICE_CLIENTS_JAVA_CP" "$ex/java/Walkthrough.java"
example kafkajs "FindCoordinator JoinGroup SyncGroup Heartbeat OffsetFetch" env NODE_PATH="$here/../kafkajs/node_modules" node "$ex/javascript/walkthrough.js"
example kcat "" "${kcat_example[@]}"

exit $SUITE_FAILED

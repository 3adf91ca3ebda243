#!/usr/bin/env bash
# A compacted topic, step by step, with kcat (librdkafka).
#
# kcat has no admin API, so create the topic first with any admin tool, for example Kafka's:
#   kafka-topics.sh --bootstrap-server localhost:9092 --create --topic walkthrough-kcat \
#     --config cleanup.policy=compact --config segment.ms=1000 --config min.cleanable.dirty.ratio=0.01
# then:
#   examples/compacted-topics/kcat/walkthrough.sh [bootstrap] [topic]
#
# It writes two versions of user-42 and a tombstone for user-7, reads all three back, then waits
# for the cleaner and reads again: user-42=v2 now comes first, at offset 1. Defaults: localhost:9092
# and walkthrough-kcat. SKIP_COMPACTION=1 stops after the first read; WAIT_SECONDS (default 60) bounds
# the wait. Exit status: 0 done, 1 a step failed, 3 the cleaner did not run in time.
set -euo pipefail
B=${1:-localhost:9092}
T=${2:-walkthrough-kcat}
WAIT_SECONDS=${WAIT_SECONDS:-60}

# 1. The topic must exist and be compacted (see above).
if ! kcat -b "$B" -L -t "$T" 2>/dev/null | grep -q "topic \"$T\" with 1 partitions"; then
  echo "error: topic $T does not exist (or has more than one partition): create it first, see the comment at the top" >&2
  exit 1
fi

# 2. -K: splits key from value; -Z sends an empty value as NULL, so user-7's line is a tombstone.
printf 'user-42:v1\nuser-42:v2\nuser-7:\n' | kcat -b "$B" -P -t "$T" -p 0 -Z -K:
echo "produced user-42=v1, user-42=v2 and a tombstone for user-7"

# read N: the first N records from the start of the log; -Z prints a null value as NULL.
read_all() { timeout 20 kcat -b "$B" -C -t "$T" -p 0 -o beginning -c "$1" -e -Z -f 'offset %o: %k=%s\n' 2>/dev/null || true; }

# 3. All three are there before compaction.
got=$(read_all 3)
echo "$got" | sed 's/^/   /'
want=$'offset 0: user-42=v1\noffset 1: user-42=v2\noffset 2: user-7=NULL'
[ "$got" = "$want" ] || { echo "error: want $want" >&2; exit 1; }
[ "${SKIP_COMPACTION:-}" = 1 ] && exit 0

# 4. Wait for the cleaner: user-42=v1 goes, offsets stay as they were.
echo "waiting up to ${WAIT_SECONDS}s for the cleaner..."
deadline=$(( $(date +%s) + WAIT_SECONDS ))
until got=$(read_all 2); [ "${got%%:*}" = "offset 1" ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "error: not compacted in time: the log still starts with: $(echo "$got" | head -n 1)" >&2
    exit 3
  fi
  sleep 1
done
echo "$got" | sed 's/^/   /'
want=$'offset 1: user-42=v2\noffset 2: user-7=NULL'
[ "$got" = "$want" ] || { echo "error: want $want" >&2; exit 1; }

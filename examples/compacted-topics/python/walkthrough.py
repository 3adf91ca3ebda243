"""A compacted topic, step by step, with confluent-kafka (librdkafka).

Create a topic with cleanup.policy=compact, write two versions of user-42 and a
tombstone for user-7, read all three back, then wait for the cleaner and read
again: user-42=v2 now comes first, at offset 1.

    pip install confluent-kafka
    python walkthrough.py [bootstrap] [topic]

Defaults: localhost:9092 and walkthrough-python. SKIP_COMPACTION=1 stops after the
first read; WAIT_SECONDS (default 60) bounds the wait for the cleaner.
Exit status: 0 done, 1 a step failed, 3 the cleaner did not run in time.
"""

import os
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap = sys.argv[1] if len(sys.argv) > 1 else "localhost:9092"
topic = sys.argv[2] if len(sys.argv) > 2 else "walkthrough-python"
wait = int(os.environ.get("WAIT_SECONDS", "60"))


def show(records):
    return [f"offset {o}: {k}={'<tombstone>' if v is None else v}" for o, k, v in records]


def read_all(n):
    """The first n records of partition 0, from the start of the log."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "walkthrough-reader", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out, deadline = [], time.monotonic() + 10
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                raise RuntimeError(f"consume: {m.error()}")
            out.append((m.offset(), m.key().decode(), None if m.value() is None else m.value().decode()))
        return out
    finally:
        c.close()


def expect(got, want):
    if show(got)[: len(want)] != want:
        sys.exit(f"error: want {want}, got {show(got)}")


# 1. A compacted topic; segment.ms and min.cleanable.dirty.ratio are low so that
#    the cleaner picks this tiny topic up within seconds.
admin = AdminClient({"bootstrap.servers": bootstrap})
config = {"cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01"}
admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config=config)])[topic].result(30)
print(f"created compacted topic {topic}")

# 2. Two versions of user-42, then a tombstone (None value) for user-7.
producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
errors = []
for key, value in [("user-42", "v1"), ("user-42", "v2"), ("user-7", None)]:
    producer.produce(topic, key=key, value=value, partition=0, on_delivery=lambda err, _: err and errors.append(err))
if producer.flush(30) or errors:
    sys.exit(f"error: produce: {errors or 'not delivered in 30s'}")
print("produced user-42=v1, user-42=v2 and a tombstone for user-7")

# 3. All three are there before compaction.
got = read_all(3)
print("\n".join("   " + line for line in show(got)))
expect(got, ["offset 0: user-42=v1", "offset 1: user-42=v2", "offset 2: user-7=<tombstone>"])
if os.environ.get("SKIP_COMPACTION") == "1":
    sys.exit(0)

# 4. Wait for the cleaner: user-42=v1 goes, offsets stay as they were.
print(f"waiting up to {wait}s for the cleaner...")
deadline = time.monotonic() + wait
while True:
    got = read_all(2)
    if got and got[0][0] == 1:
        break
    if time.monotonic() > deadline:
        print(f"error: not compacted in time: the log still starts with {show(got)}", file=sys.stderr)
        sys.exit(3)
    time.sleep(1)
print("\n".join("   " + line for line in show(got)))
expect(got, ["offset 1: user-42=v2", "offset 2: user-7=<tombstone>"])

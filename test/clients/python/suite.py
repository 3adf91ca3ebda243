"""Sluice conformance scenarios with confluent-kafka for Python (librdkafka).

Run by scripts/test-clients.sh with the environment it exports (SLUICE_BOOTSTRAP,
SLUICE_APIS, SLUICE_RESULTS_DIR, SLUICE_RUN_ID). Each scenario is a function
registered with @scenario; it raises on any misbehaviour. Results go to
$SLUICE_RESULTS_DIR/python.jsonl, one JSON object per line. The exit status is
1 when any scenario failed.
"""

import json
import os
import sys
import time
import traceback
import warnings

import confluent_kafka
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

BOOTSTRAP = os.environ["SLUICE_BOOTSTRAP"]
APIS = set(filter(None, os.environ.get("SLUICE_APIS", "").split(",")))
RESULTS = os.path.join(os.environ["SLUICE_RESULTS_DIR"], "python.jsonl")
PREFIX = "py-" + os.environ.get("SLUICE_RUN_ID", str(os.getpid()))
TIMEOUT = 30.0  # seconds for any single broker round trip or poll loop
BASE = {"bootstrap.servers": BOOTSTRAP, "log_level": 4}  # warnings and worse from librdkafka

SCENARIOS = []


def scenario(feature, *apis):
    """Register a scenario for a matrix feature, run only if the broker advertises apis."""

    def wrap(fn):
        SCENARIOS.append((fn.__name__, feature, apis, fn))
        return fn

    return wrap


def emit(obj):
    with open(RESULTS, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj) + "\n")


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


_ADMIN = None


def admin():
    """The shared AdminClient (a client's futures fail if the client is garbage collected)."""
    global _ADMIN
    if _ADMIN is None:
        _ADMIN = AdminClient({**BASE, "socket.timeout.ms": 10000})
    return _ADMIN


def wait_future(fut):
    return fut.result(timeout=TIMEOUT)


def create_topic(name, config=None, partitions=1):
    futs = admin().create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=TIMEOUT,
        request_timeout=TIMEOUT,
    )
    wait_future(futs[name])


def topic_config(name):
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    futs = admin().describe_configs([res], request_timeout=TIMEOUT)
    return {k: v.value for k, v in wait_future(futs[res]).items()}


def eventually(what, fn, timeout=TIMEOUT):
    """Poll fn until it returns a truthy value; raise with its last value after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"{what}: not true within {timeout}s (last: {last!r})")


def produce(topic, records, **conf):
    """Produce (key, value) pairs to partition 0 and return their delivery offsets."""
    p = Producer({**BASE, "linger.ms": 5, **conf})
    errors, offsets = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    for key, value in records:
        p.produce(topic, key=key, value=value, partition=0, on_delivery=on_delivery)
    left = p.flush(TIMEOUT)
    check(not errors, f"delivery failed: {errors[0] if errors else ''}")
    check(left == 0, f"{left} records still undelivered after {TIMEOUT}s")
    return offsets


def read_from_beginning(topic, count):
    """Read count records of partition 0 from the log start without a group."""
    c = Consumer(
        {
            **BASE,
            "group.id": PREFIX + "-unused",  # required by the client; no group calls with assign()
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out = []
        deadline = time.monotonic() + TIMEOUT
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            check(m.error() is None, f"consume error: {m.error()}")
            out.append((m.offset(), m.key(), m.value()))
        check(len(out) == count, f"read {len(out)} of {count} records within {TIMEOUT}s: {out}")
        return out
    finally:
        c.close()


# ---- admin -------------------------------------------------------------------------------

@scenario("admin.describe-cluster", "DescribeCluster")
def describe_cluster():
    d = wait_future(admin().describe_cluster(request_timeout=TIMEOUT))
    check(d.cluster_id, "no cluster id")
    check(len(d.nodes) >= 1, f"no nodes: {d.nodes}")
    check(d.controller is not None, "no controller")


@scenario("metadata", "Metadata")
def list_topics():
    md = admin().list_topics(timeout=TIMEOUT)
    check(len(md.brokers) >= 1, "no brokers in metadata")


@scenario("admin.create-topic", "CreateTopics", "Metadata")
def create_compacted_topic():
    t = PREFIX + "-compacted"
    create_topic(t, {"cleanup.policy": "compact"})
    md = admin().list_topics(topic=t, timeout=TIMEOUT)
    check(t in md.topics and md.topics[t].error is None, f"{t} not in metadata: {md.topics}")
    check(len(md.topics[t].partitions) == 1, f"{t} partitions: {md.topics[t].partitions}")


@scenario("admin.describe-configs", "CreateTopics", "DescribeConfigs")
def describe_configs():
    t = PREFIX + "-describe"
    create_topic(t, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"})
    cfg = topic_config(t)
    check(cfg.get("cleanup.policy") == "compact", f"cleanup.policy={cfg.get('cleanup.policy')!r}")
    check(cfg.get("min.cleanable.dirty.ratio") == "0.1", f"min.cleanable.dirty.ratio={cfg.get('min.cleanable.dirty.ratio')!r}")
    check(cfg.get("segment.bytes") == "1073741824", f"default segment.bytes={cfg.get('segment.bytes')!r}")


@scenario("admin.invalid-config", "CreateTopics", "Metadata")
def invalid_cleanup_policy_refused():
    t = PREFIX + "-shred"
    try:
        create_topic(t, {"cleanup.policy": "shred"})
    except KafkaException as e:
        err = e.args[0]
        check(err.code() == KafkaError.INVALID_CONFIG, f"want INVALID_CONFIG, got {err.name()}: {err.str()}")
    else:
        raise AssertionError("cleanup.policy=shred was accepted")
    md = admin().list_topics(timeout=TIMEOUT)
    check(t not in md.topics, f"{t} exists after a refused create")


@scenario("admin.alter-configs", "CreateTopics", "IncrementalAlterConfigs", "DescribeConfigs")
def incremental_alter_configs():
    t = PREFIX + "-alter"
    create_topic(t)
    res = ConfigResource(
        ConfigResource.Type.TOPIC,
        t,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact,delete", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    wait_future(admin().incremental_alter_configs([res], request_timeout=TIMEOUT)[res])
    cfg = topic_config(t)
    check(cfg.get("cleanup.policy") == "compact,delete", f"cleanup.policy={cfg.get('cleanup.policy')!r}")
    check(cfg.get("retention.ms") == "3600000", f"retention.ms={cfg.get('retention.ms')!r}")
    bad = ConfigResource(
        ConfigResource.Type.TOPIC,
        t,
        incremental_configs=[ConfigEntry("cleanup.policy", "shred", incremental_operation=AlterConfigOpType.SET)],
    )
    try:
        wait_future(admin().incremental_alter_configs([bad], request_timeout=TIMEOUT)[bad])
    except KafkaException as e:
        err = e.args[0]
        check(err.code() == KafkaError.INVALID_CONFIG, f"want INVALID_CONFIG, got {err.name()}: {err.str()}")
    else:
        raise AssertionError("cleanup.policy=shred was accepted by IncrementalAlterConfigs")
    check(topic_config(t).get("cleanup.policy") == "compact,delete", "a refused alter changed cleanup.policy")


@scenario("admin.alter-configs-legacy", "CreateTopics", "AlterConfigs", "DescribeConfigs")
def legacy_alter_configs():
    t = PREFIX + "-legacy-alter"
    create_topic(t)
    res = ConfigResource(ConfigResource.Type.TOPIC, t, set_config={"cleanup.policy": "compact"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # deprecated on purpose: the legacy request
        fut = admin().alter_configs([res], request_timeout=TIMEOUT)[res]
    wait_future(fut)
    cfg = topic_config(t)
    check(cfg.get("cleanup.policy") == "compact", f"cleanup.policy={cfg.get('cleanup.policy')!r}")


@scenario("admin.delete-topic", "CreateTopics", "DeleteTopics", "Metadata")
def delete_topic():
    t = PREFIX + "-delete-me"
    create_topic(t)
    wait_future(admin().delete_topics([t], operation_timeout=TIMEOUT, request_timeout=TIMEOUT)[t])
    eventually(f"{t} gone from metadata", lambda: t not in admin().list_topics(timeout=TIMEOUT).topics)


# ---- data path ---------------------------------------------------------------------------

WALK = [(b"user-42", b"v1"), (b"user-42", b"v2"), (b"user-7", None)]


@scenario("produce.tombstone", "CreateTopics", "Produce", "Fetch", "ListOffsets")
def produce_tombstones_and_consume():
    t = PREFIX + "-tombstones"
    create_topic(t, {"cleanup.policy": "compact"})
    offsets = produce(t, WALK)
    check(sorted(offsets) == [0, 1, 2], f"delivery offsets {offsets}")
    got = read_from_beginning(t, 3)
    check(got == [(0, b"user-42", b"v1"), (1, b"user-42", b"v2"), (2, b"user-7", None)], f"read {got}")


@scenario("consume.from-beginning", "CreateTopics", "Produce", "Fetch", "ListOffsets")
def consume_from_beginning():
    t = PREFIX + "-from-beginning"
    create_topic(t)
    want = [(b"k%d" % i, b"value-%d" % i) for i in range(500)]
    produce(t, want, **{"compression.type": "lz4"})
    got = read_from_beginning(t, len(want))
    check([o for o, _, _ in got] == list(range(len(want))), "offsets not 0..499 in order")
    check([(k, v) for _, k, v in got] == want, "records differ from those produced")


@scenario("produce.idempotent", "CreateTopics", "Produce", "Fetch", "ListOffsets", "InitProducerID")
def idempotent_producer():
    t = PREFIX + "-idempotent"
    create_topic(t)
    want = [(b"k%d" % i, b"v%d" % i) for i in range(200)]
    offsets = produce(t, want, **{"enable.idempotence": True, "acks": "all", "max.in.flight.requests.per.connection": 5})
    check(sorted(offsets) == list(range(200)), "idempotent delivery offsets are not 0..199")
    got = read_from_beginning(t, len(want))
    check([(k, v) for _, k, v in got] == want, "records differ from those produced (duplicates or reordering)")


GROUP_APIS = ("CreateTopics", "Produce", "Fetch", "ListOffsets", "FindCoordinator", "OffsetCommit", "OffsetFetch")


def group_round_trip(t, group, extra):
    """A group member reads all records, commits them by hand, leaves; a second member
    of the same group then starts from the committed offset and sees nothing old."""
    conf = {
        **BASE,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **extra,
    }
    c = Consumer(conf)
    seen = []
    try:
        c.subscribe([t])
        deadline = time.monotonic() + 60
        while len(seen) < 10 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            check(m.error() is None, f"consume error: {m.error()}")
            seen.append(m.value())
        check(len(seen) == 10, f"group member read {len(seen)} of 10 records within 60s")
        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition(t, 0)], timeout=TIMEOUT)
        check(committed[0].offset == 10, f"committed offset {committed[0].offset}, want 10")
    finally:
        c.close()
    produce(t, [(b"late", b"after-commit")])
    c = Consumer(conf)
    try:
        c.subscribe([t])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            check(m.error() is None, f"consume error: {m.error()}")
            check(m.value() == b"after-commit", f"second member re-read {m.value()!r} (offset {m.offset()}), committed offsets ignored")
            return
        raise AssertionError("second member got nothing within 60s")
    finally:
        c.close()


@scenario("group.classic", *GROUP_APIS, "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup")
def group_consumer_classic():
    t = PREFIX + "-group-classic"
    create_topic(t)
    produce(t, [(b"k%d" % i, b"v%d" % i) for i in range(10)])
    group_round_trip(t, PREFIX + "-classic", {"group.protocol": "classic", "session.timeout.ms": 10000})


@scenario("group.consumer", *GROUP_APIS, "ConsumerGroupHeartbeat")
def group_consumer_kip848():
    t = PREFIX + "-group-consumer"
    create_topic(t)
    produce(t, [(b"k%d" % i, b"v%d" % i) for i in range(10)])
    group_round_trip(t, PREFIX + "-consumer", {"group.protocol": "consumer"})


@scenario("admin.groups", *GROUP_APIS, "JoinGroup", "SyncGroup", "ListGroups", "DescribeGroups")
def list_and_describe_groups():
    t = PREFIX + "-groups-admin"
    group = PREFIX + "-listed"
    create_topic(t)
    produce(t, [(b"k", b"v")])
    c = Consumer({**BASE, "group.id": group, "auto.offset.reset": "earliest", "group.protocol": "classic"})
    try:
        c.subscribe([t])
        eventually("member got its record", lambda: (lambda m: m is not None and m.error() is None)(c.poll(0.5)), 60)
        listed = eventually(
            f"{group} listed",
            lambda: [g for g in wait_future(admin().list_consumer_groups(request_timeout=TIMEOUT)).valid if g.group_id == group],
        )
        check(listed[0].group_id == group, f"listed {listed}")
        d = wait_future(admin().describe_consumer_groups([group], request_timeout=TIMEOUT)[group])
        check(len(d.members) == 1, f"{group} members: {d.members}")
        check(any(tp.topic == t for tp in d.members[0].assignment.topic_partitions), f"assignment {d.members[0].assignment.topic_partitions}")
    finally:
        c.close()


def main():
    only = set(sys.argv[1:])
    emit({"client": "python", "client_version": f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})"})
    failed = False
    for name, feature, apis, fn in SCENARIOS:
        if only and name not in only:
            continue
        missing = [a for a in apis if a not in APIS]
        rec = {"client": "python", "test": name, "feature": feature, "ms": 0}
        if missing:
            rec.update(status="skip", detail="broker does not advertise " + " ".join(missing))
        else:
            start = time.monotonic()
            try:
                fn()
                rec.update(status="pass", detail="")
            except Exception as e:  # every failure is reported, none stops the suite
                traceback.print_exc()
                rec.update(status="fail", detail=f"{type(e).__name__}: {e}"[:2000])
                failed = True
            rec["ms"] = int((time.monotonic() - start) * 1000)
        emit(rec)
        print(f"{rec['status'].upper()} python/{name}" + (f": {rec['detail']}" if rec["detail"] else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

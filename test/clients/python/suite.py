"""Sluice conformance scenarios for Python clients: confluent-kafka (librdkafka,
client id "python") and the pure-Python protocol implementations kafka-python
("kafka-python") and aiokafka ("aiokafka").

Run by scripts/test-clients.sh with the environment it exports (SLUICE_BOOTSTRAP,
SLUICE_APIS, SLUICE_RESULTS_DIR, SLUICE_RUN_ID; for the security scenarios
SLUICE_SASL_SSL_BOOTSTRAP, SLUICE_SASL_PLAINTEXT_BOOTSTRAP, SLUICE_CA_PEM,
SLUICE_SASL_PLAIN_USER and SLUICE_SASL_PLAIN_PASSWORD, which skip when unset). Each scenario is a function
registered with @scenario; it raises on any misbehaviour, or raises Skip when a
known broker issue (see /work/notes/broker-bugs.md) keeps it from running.
Results go to $SLUICE_RESULTS_DIR/<client>.jsonl, one JSON object per line. The
exit status is 1 when any scenario failed.
"""

import asyncio
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
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

import aiokafka
import aiokafka.admin
import aiokafka.helpers
import kafka
import kafka.admin
import kafka.errors

BOOTSTRAP = os.environ["SLUICE_BOOTSTRAP"]
APIS = set(filter(None, os.environ.get("SLUICE_APIS", "").split(",")))
RESULTS_DIR = os.environ["SLUICE_RESULTS_DIR"]
PREFIX = "py-" + os.environ.get("SLUICE_RUN_ID", str(os.getpid()))
TIMEOUT = 30.0  # seconds for any single broker round trip or poll loop
BASE = {"bootstrap.servers": BOOTSTRAP, "log_level": 4}  # warnings and worse from librdkafka

SCENARIOS = []


def scenario(feature, *apis, client="python"):
    """Register a scenario of client for a matrix feature, run only if the broker advertises apis."""

    def wrap(fn):
        SCENARIOS.append((client, fn.__name__, feature, apis, fn))
        return fn

    return wrap


class Skip(Exception):
    """Raised by a scenario that cannot run because of a known broker issue; the message says which."""


def emit(obj):
    with open(os.path.join(RESULTS_DIR, obj["client"] + ".jsonl"), "a", encoding="utf-8") as f:
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


def read_from_beginning(topic, count, **conf):
    """Read count records of partition 0 from the log start without a group."""
    c = Consumer(
        {
            **BASE,
            "group.id": PREFIX + "-unused",  # required by the client; no group calls with assign()
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **conf,
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


# ---- transactions (librdkafka) -----------------------------------------------------------

TXN_APIS = ("CreateTopics", "Produce", "Fetch", "ListOffsets", "InitProducerID", "FindCoordinator",
            "AddPartitionsToTxn", "EndTxn")


def read_isolated(topic, partitions, isolation):
    """All values of the topic up to its end offsets (the LSO for read_committed), sorted."""
    c = Consumer({**BASE, "group.id": PREFIX + "-unused", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": isolation})
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        values, eof = [], set()
        deadline = time.monotonic() + TIMEOUT
        while len(eof) < partitions and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                check(m.error().code() == KafkaError._PARTITION_EOF, f"consume error: {m.error()}")
                eof.add(m.partition())
                continue
            values.append(m.value())
        check(len(eof) == partitions, f"{isolation}: reached the end of {len(eof)} of {partitions} partitions")
        return sorted(values)
    finally:
        c.close()


def tx_producer(txn_id):
    p = Producer({**BASE, "transactional.id": txn_id, "transaction.timeout.ms": 60000})
    p.init_transactions(TIMEOUT)
    return p


@scenario("transactions.commit-abort", *TXN_APIS)
def transactions_commit_abort():
    t = PREFIX + "-txn"
    create_topic(t, partitions=2)
    p = tx_producer(t + "-tx")
    p.begin_transaction()
    for i in range(4):
        p.produce(t, key=b"k%d" % i, value=b"committed-%d" % i, partition=i % 2)
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    for i in range(3):
        p.produce(t, key=b"k%d" % i, value=b"aborted-%d" % i, partition=i % 2)
    check(p.flush(TIMEOUT) == 0, "aborted records not delivered before the abort")
    p.abort_transaction(TIMEOUT)
    p.begin_transaction()
    p.produce(t, key=b"k9", value=b"committed-9", partition=1)
    p.commit_transaction(TIMEOUT)
    committed = read_isolated(t, 2, "read_committed")
    check(committed == [b"committed-0", b"committed-1", b"committed-2", b"committed-3", b"committed-9"],
          f"read_committed saw {committed}")
    everything = read_isolated(t, 2, "read_uncommitted")
    check(len(everything) == 8 and b"aborted-0" in everything, f"read_uncommitted saw {everything}")


@scenario("transactions.send-offsets", *TXN_APIS, "AddOffsetsToTxn", "TxnOffsetCommit", "OffsetFetch",
          "JoinGroup", "SyncGroup")
def transactions_send_offsets():
    src, dst, group = PREFIX + "-txn-in", PREFIX + "-txn-out", PREFIX + "-txn-group"
    create_topic(src)
    create_topic(dst)
    produce(src, [(b"k%d" % i, b"v%d" % i) for i in range(5)])
    c = Consumer({**BASE, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    p = tx_producer(group + "-tx")
    try:
        c.subscribe([src])
        done = 0
        deadline = time.monotonic() + TIMEOUT
        while done < 5 and time.monotonic() < deadline:
            msgs = c.consume(10, 0.5)
            msgs = [m for m in msgs if m.error() is None]
            if not msgs:
                continue
            p.begin_transaction()
            for m in msgs:
                p.produce(dst, key=m.key(), value=m.value().upper(), partition=0)
            p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), TIMEOUT)
            p.commit_transaction(TIMEOUT)
            done += len(msgs)
        check(done == 5, f"processed {done} of 5 records")
    finally:
        c.close()
    committed = wait_future(admin().list_consumer_group_offsets(
        [confluent_kafka.ConsumerGroupTopicPartitions(group, [TopicPartition(src, 0)])])[group])
    offs = {tp.partition: tp.offset for tp in committed.topic_partitions}
    check(offs.get(0) == 5, f"group offset after the transaction: {offs}")
    out = read_isolated(dst, 1, "read_committed")
    check(out == [b"V0", b"V1", b"V2", b"V3", b"V4"], f"output: {out}")


# ---- security: SASL_SSL and SASL_PLAINTEXT listeners ----------------------------------------

SASL_SSL = os.environ.get("SLUICE_SASL_SSL_BOOTSTRAP", "")
SASL_PLAINTEXT = os.environ.get("SLUICE_SASL_PLAINTEXT_BOOTSTRAP", "")
CA_PEM = os.environ.get("SLUICE_CA_PEM", "")
PLAIN_USER = os.environ.get("SLUICE_SASL_PLAIN_USER", "alice")
PLAIN_PASSWORD = os.environ.get("SLUICE_SASL_PLAIN_PASSWORD", "alice-secret")
SASL_APIS = ("SASLHandshake", "SASLAuthenticate")
SCRAM_APIS = (*SASL_APIS, "AlterUserSCRAMCredentials", "DescribeUserSCRAMCredentials")
SEC_PREFIX = PREFIX + "-sec"


def need_env(**values):
    """Skip unless every listener setting is given (an external broker may lack the listener)."""
    missing = [name for name, v in values.items() if not v]
    if missing:
        raise Skip("not set: " + " ".join(missing) + " (no such listener)")


def plain_ssl_conf(password=None):
    need_env(SLUICE_SASL_SSL_BOOTSTRAP=SASL_SSL, SLUICE_CA_PEM=CA_PEM)
    return {
        "bootstrap.servers": SASL_SSL,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": CA_PEM,
        "sasl.mechanisms": "PLAIN",
        "sasl.username": PLAIN_USER,
        "sasl.password": PLAIN_PASSWORD if password is None else password,
    }


def create_scram_user(user, password, mechanism, iterations=8192):
    """Create a SCRAM credential through the PLAINTEXT listener and check DescribeUserScramCredentials lists it."""
    futs = admin().alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), password.encode())],
        request_timeout=TIMEOUT,
    )
    wait_future(futs[user])
    desc = wait_future(admin().describe_user_scram_credentials([user], request_timeout=TIMEOUT)[user])
    got = [(i.mechanism, i.iterations) for i in desc.scram_credential_infos]
    check(got == [(mechanism, iterations)], f"described credentials of {user}: {got}")


def round_trip(t, conf):
    """Create t through the PLAINTEXT listener, produce three records and read them back with conf."""
    create_topic(t)
    records = [(b"k1", b"v1"), (b"k2", None), (b"k3", b"over " + conf["security.protocol"].encode())]
    offsets = produce(t, records, **conf)
    check(offsets == [0, 1, 2], f"offsets {offsets}")
    got = read_from_beginning(t, 3, **conf)
    check(got == [(i, k, v) for i, (k, v) in enumerate(records)], f"read {got}")


@scenario("security.sasl-plain-ssl", *SASL_APIS, "CreateTopics", "Produce", "Fetch", "ListOffsets", "Metadata")
def sasl_plain_ssl():
    """PLAIN over SASL_SSL: produce and consume; Metadata advertises the SASL_SSL listener."""
    conf = plain_ssl_conf()
    round_trip(SEC_PREFIX + "-plain-ssl", conf)
    md = AdminClient({**BASE, **conf}).list_topics(timeout=TIMEOUT)
    brokers = [f"{b.host}:{b.port}" for b in md.brokers.values()]
    check(brokers == [SASL_SSL], f"SASL_SSL listener advertises {brokers}, want [{SASL_SSL}]")


@scenario("security.scram", *SCRAM_APIS, "CreateTopics", "Produce", "Fetch", "ListOffsets")
def scram_sha256_sasl_plaintext():
    """A SCRAM-SHA-256 user made with AlterUserScramCredentials logs in over SASL_PLAINTEXT."""
    need_env(SLUICE_SASL_PLAINTEXT_BOOTSTRAP=SASL_PLAINTEXT)
    user, password = SEC_PREFIX + "-scram256", "scram-256-secret"
    create_scram_user(user, password, ScramMechanism.SCRAM_SHA_256)
    conf = {
        "bootstrap.servers": SASL_PLAINTEXT,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": password,
    }
    round_trip(SEC_PREFIX + "-scram256", conf)


@scenario("security.wrong-password", *SASL_APIS, "Metadata")
def sasl_wrong_password():
    """A wrong PLAIN password over SASL_SSL is reported as an authentication error, not a hang."""
    errors = []
    conf = {**BASE, **plain_ssl_conf("not-" + PLAIN_PASSWORD), "error_cb": errors.append}
    # Quiet: librdkafka logs every failed attempt, and retries every reconnect.backoff.ms.
    a = AdminClient({**conf, "log_level": 0, "reconnect.backoff.ms": 500})
    try:
        a.list_topics(timeout=3)
    except KafkaException:
        pass
    else:
        raise AssertionError("metadata with a wrong password succeeded")
    eventually("authentication error reported", lambda: a.poll(0.1) is not None and errors, timeout=10)
    check(
        any(e.code() == KafkaError._AUTHENTICATION and "Authentication failed" in e.str() for e in errors),
        f"errors: {errors}",
    )


OAUTH = os.environ.get("SLUICE_OAUTH_BOOTSTRAP", "")
OAUTH_TOKEN_URL = os.environ.get("SLUICE_OAUTH_TOKEN_URL", "")
OAUTH_CLIENT_ID = os.environ.get("SLUICE_OAUTH_CLIENT_ID", "")
OAUTH_CLIENT_SECRET = os.environ.get("SLUICE_OAUTH_CLIENT_SECRET", "")


@scenario("security.oauthbearer-unsecured", *SASL_APIS, "CreateTopics", "Produce", "Fetch", "ListOffsets")
def oauthbearer_unsecured():
    """OAUTHBEARER with librdkafka's unsecured JWT (sasl.oauthbearer.config) over SASL_PLAINTEXT."""
    need_env(SLUICE_SASL_PLAINTEXT_BOOTSTRAP=SASL_PLAINTEXT)
    conf = {
        "bootstrap.servers": SASL_PLAINTEXT,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": "principal=alice scope=kafka",
    }
    round_trip(SEC_PREFIX + "-oauth-unsecured", conf)


@scenario("security.oauthbearer-oidc", *SASL_APIS, "CreateTopics", "Produce", "Fetch", "ListOffsets")
def oauthbearer_oidc():
    """OAUTHBEARER with librdkafka's OIDC client-credentials login; the broker checks the JWT against the JWKS."""
    need_env(SLUICE_OAUTH_BOOTSTRAP=OAUTH, SLUICE_OAUTH_TOKEN_URL=OAUTH_TOKEN_URL)
    conf = {
        "bootstrap.servers": OAUTH,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": OAUTH_TOKEN_URL,
        "sasl.oauthbearer.client.id": OAUTH_CLIENT_ID,
        "sasl.oauthbearer.client.secret": OAUTH_CLIENT_SECRET,
    }
    round_trip(SEC_PREFIX + "-oauth-oidc", conf)


# ---- security: the authorizer (a second broker, SLUICE_ACL_*) ---------------------------------

ACL = os.environ.get("SLUICE_ACL_BOOTSTRAP", "")
ACL_APIS = (*SASL_APIS, "CreateACLs", "DescribeACLs", "DeleteACLs", "CreateTopics", "Produce", "Fetch",
            "ListOffsets", "FindCoordinator", "JoinGroup", "OffsetCommit", "OffsetFetch", "InitProducerID",
            "AddPartitionsToTxn", "EndTxn")


def acl_conf(user, password):
    return {
        **BASE,
        "bootstrap.servers": ACL,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
        "log_level": 0,  # the refusals below are expected: librdkafka would log each retry
    }


def expect_kafka_error(what, fn, code):
    """fn() must raise KafkaException with error code; returns the error."""
    try:
        fn()
    except KafkaException as e:
        err = e.args[0]
        check(err.code() == code, f"{what}: {err} (want {KafkaError(code).name()})")
        return err
    raise AssertionError(f"{what}: succeeded, want {KafkaError(code).name()}")


def acl_produce(topic, conf, values):
    """Produce values to partition 0; return the delivery errors (None for a delivered record)."""
    p = Producer({**conf, "linger.ms": 5, "message.timeout.ms": 10000, "enable.idempotence": False})
    results = []
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=lambda err, _msg: results.append(err))
    left = p.flush(TIMEOUT)
    check(left == 0, f"{left} records neither delivered nor failed after {TIMEOUT}s")
    return results


def consumer_refused(what, c, code):
    """Poll c until it reports error code; it must deliver no record meanwhile."""
    seen = []

    def refused():
        m = c.poll(0.5)
        if m is not None:
            seen.append(m.error() or m.value())
        return any(isinstance(e, KafkaError) and e.code() == code for e in seen)
    eventually(f"{what} refused with {KafkaError(code).name()}", refused)
    check(not [v for v in seen if not isinstance(v, KafkaError)], f"{what} read records: {seen}")


@scenario("security.acls", *ACL_APIS)
def acls():
    """Authorizer on: alice without ACLs is refused produce, fetch, groups, transactions and admin with
    Kafka's errors and changes nothing; ACLs created with AdminClient.create_acls let her do each; removed
    with delete_acls, she is refused again."""
    need_env(SLUICE_ACL_BOOTSTRAP=ACL)
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                       ResourcePatternType, ResourceType)

    env = os.environ.get
    su_conf = acl_conf(env("SLUICE_ACL_ADMIN_USER", "admin"), env("SLUICE_ACL_ADMIN_PASSWORD", "admin-secret"))
    # A user of this client's own (alice-python), so that no other scenario's ACLs help it.
    al_conf = acl_conf(env("SLUICE_ACL_USER", "alice") + "-python", env("SLUICE_ACL_PASSWORD", "alice-secret"))
    principal = "User:" + al_conf["sasl.username"]
    t, g, tx, created = PREFIX + "-acl", PREFIX + "-acl-group", PREFIX + "-acl-tx", PREFIX + "-acl-new"
    su, al = AdminClient(su_conf), AdminClient(al_conf)

    def create(client, name):
        wait_future(client.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)],
                                         request_timeout=TIMEOUT)[name])

    def end_offset(client_conf):
        c = Consumer({**client_conf, "group.id": g + "-unused", "enable.auto.commit": False})
        try:
            return c.get_watermark_offsets(TopicPartition(t, 0), timeout=TIMEOUT)[1]
        finally:
            c.close()

    create(su, t)
    check(acl_produce(t, su_conf, [b"by-admin"]) == [None], "the super user's produce failed")

    # Without ACLs: every family refused with Kafka's error.
    expect_kafka_error("alice creates a topic", lambda: create(al, created), KafkaError.TOPIC_AUTHORIZATION_FAILED)
    # (CreateAcls: librdkafka 2.16's describe_acls drops DescribeAcls' top-level error and returns an empty
    # list; the broker does send CLUSTER_AUTHORIZATION_FAILED there, which tools.acls-authorizer checks.)
    alice_grants = AclBinding(ResourceType.TOPIC, t, ResourcePatternType.LITERAL, principal, "*",
                              AclOperation.ALL, AclPermissionType.ALLOW)
    expect_kafka_error("alice grants herself ACLs", lambda: [wait_future(f) for f in al.create_acls(
        [alice_grants], request_timeout=TIMEOUT).values()], KafkaError.CLUSTER_AUTHORIZATION_FAILED)
    errs = acl_produce(t, al_conf, [b"denied-1", b"denied-2"])
    check(all(e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errs),
          f"alice's produce without ACLs: {errs}")
    c = Consumer({**al_conf, "group.id": g, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([t])
        consumer_refused("alice's group consumer", c, KafkaError.GROUP_AUTHORIZATION_FAILED)
    finally:
        c.close()
    expect_kafka_error("alice fetches the group's offsets", lambda: wait_future(al.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(g, [TopicPartition(t, 0)])])[g]), KafkaError.GROUP_AUTHORIZATION_FAILED)
    expect_kafka_error("alice's transactional producer", lambda: Producer(
        {**al_conf, "transactional.id": tx}).init_transactions(TIMEOUT),
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)

    # A denied request changed nothing: no record, no topic, no group.
    check(end_offset(su_conf) == 1, f"end offset after alice's denied produce: {end_offset(su_conf)} (want 1)")
    check(created not in su.list_topics(timeout=TIMEOUT).topics, f"{created} exists after a denied CreateTopics")
    groups = wait_future(su.list_consumer_groups(request_timeout=TIMEOUT))
    check(g not in [x.group_id for x in groups.valid], f"{g} exists after denied group requests")

    # ACLs created with the admin API: the group first, so that the consumer's refusal is the topic's.
    allow = AclPermissionType.ALLOW
    bindings = [AclBinding(ResourceType.GROUP, g, ResourcePatternType.LITERAL, principal, "*", AclOperation.READ,
                           allow)]
    wait_future(su.create_acls(bindings, request_timeout=TIMEOUT)[bindings[0]])
    c = Consumer({**al_conf, "group.id": g, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([t])
        consumer_refused("alice's consumer (Read on the group, not the topic)", c,
                         KafkaError.TOPIC_AUTHORIZATION_FAILED)
    finally:
        c.close()
    more = [AclBinding(ResourceType.TOPIC, t, ResourcePatternType.LITERAL, principal, "*", op, allow)
            for op in (AclOperation.WRITE, AclOperation.READ)]
    more += [
        AclBinding(ResourceType.TRANSACTIONAL_ID, tx, ResourcePatternType.LITERAL, principal, "*",
                   AclOperation.WRITE, allow),
        AclBinding(ResourceType.TOPIC, created, ResourcePatternType.PREFIXED, principal, "*",
                   AclOperation.CREATE, allow),
    ]
    for f in su.create_acls(more, request_timeout=TIMEOUT).values():
        wait_future(f)
    bindings += more
    mine = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, principal, None, AclOperation.ANY,
                            AclPermissionType.ANY)
    listed = wait_future(su.describe_acls(mine, request_timeout=TIMEOUT))
    check(len(listed) == len(bindings), f"describe_acls lists {len(listed)} of alice's {len(bindings)} ACLs: {listed}")

    create(al, created)
    check(acl_produce(t, al_conf, [b"by-alice"]) == [None], "alice's produce with Write failed")
    c = Consumer({**al_conf, "group.id": g, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([t])
        got = []
        deadline = time.monotonic() + 60
        while len(got) < 2 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            check(m.error() is None, f"alice's group consumer: {m.error()}")
            got.append(m.value())
        check(got == [b"by-admin", b"by-alice"], f"alice's group consumer read {got}")
        c.commit(asynchronous=False)
    finally:
        c.close()
    offs = wait_future(al.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g, [TopicPartition(t, 0)])])[g])
    check([tp.offset for tp in offs.topic_partitions] == [2], f"alice's committed offsets: {offs.topic_partitions}")
    p = Producer({**al_conf, "transactional.id": tx, "transaction.timeout.ms": 60000})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    p.produce(t, value=b"in-txn", partition=0)
    p.commit_transaction(TIMEOUT)
    check(end_offset(al_conf) == 4, f"end offset after alice's transaction: {end_offset(al_conf)} (want 4)")

    # Removed again: refused again.
    deleted = wait_future(su.delete_acls([mine], request_timeout=TIMEOUT)[mine])
    check(len(deleted) == len(bindings), f"delete_acls removed {len(deleted)} of {len(bindings)}")
    errs = acl_produce(t, al_conf, [b"denied-3"])
    check(errs[0] is not None and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED,
          f"alice's produce after delete_acls: {errs}")


# ---- kafka-python (pure-Python protocol implementation) ------------------------------------

KP_BASE = {"bootstrap_servers": BOOTSTRAP, "request_timeout_ms": int(TIMEOUT * 1000)}
KP_PREFIX = PREFIX + "-kp"
_KP_ADMIN = None


def kp_admin():
    global _KP_ADMIN
    if _KP_ADMIN is None:
        _KP_ADMIN = kafka.admin.KafkaAdminClient(**KP_BASE, client_id="sluice-kafka-python-admin")
    return _KP_ADMIN


def kp_create_topic(name, config=None):
    """Create a one-partition topic with kafka-python's admin client (it raises on a topic error)."""
    kp_admin().create_topics(
        [kafka.admin.NewTopic(name, num_partitions=1, replication_factor=1, topic_configs=config or {})],
        timeout_ms=int(TIMEOUT * 1000),
    )


def kp_topic_config(name):
    res = kafka.admin.ConfigResource(kafka.admin.ConfigResourceType.TOPIC, name)
    out = {}
    for resp in kp_admin().describe_configs([res]):
        for err, msg, _rtype, rname, entries in (r[:5] for r in resp.resources):
            check(err == 0, f"DescribeConfigs {rname}: error {kafka.errors.for_code(err).__name__}: {msg}")
            for e in entries:
                out[e[0]] = e[1]
    return out


def kp_produce(topic, records, **conf):
    """Produce (key, value) pairs to partition 0 with KafkaProducer; return their offsets."""
    p = kafka.KafkaProducer(**{**KP_BASE, "linger_ms": 5, **conf})
    try:
        futs = [p.send(topic, key=k, value=v, partition=0) for k, v in records]
        p.flush(timeout=TIMEOUT)
        return [f.get(timeout=TIMEOUT).offset for f in futs]
    finally:
        p.close(timeout=TIMEOUT)


def kp_read_from_beginning(topic, count, **conf):
    """Read count records of partition 0 from the log start without a group."""
    c = kafka.KafkaConsumer(**{**KP_BASE, "group_id": None, "enable_auto_commit": False, **conf})
    try:
        tp = kafka.TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + TIMEOUT
        while len(out) < count and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend((r.offset, r.key, r.value) for r in recs)
        check(len(out) == count, f"read {len(out)} of {count} records within {TIMEOUT}s: {out[:5]}")
        return out
    finally:
        c.close()


@scenario("metadata", "CreateTopics", "Metadata", client="kafka-python")
def kp_list_topics():
    t = KP_PREFIX + "-listed"
    kp_create_topic(t)
    try:
        eventually(f"{t} listed", lambda: t in kp_admin().list_topics())
    except ValueError as e:
        # KafkaAdminClient asks Metadata v8 for authorized operations and decodes the bits
        # with an enum that has no 14; Sluice sets bits 13 and 14 (CREATE_TOKENS,
        # DESCRIBE_TOKENS) in the cluster's set, which Kafka reports only for USER resources.
        if "is not a valid ACLOperation" in str(e):
            raise Skip(
                f"broker bug: Metadata cluster authorized_operations has CREATE_TOKENS/DESCRIBE_TOKENS "
                f"(Kafka reports them only for USER resources); kafka-python: ValueError: {e}"
            ) from e
        raise


@scenario("admin.create-topic", "CreateTopics", "DescribeConfigs", client="kafka-python")
def kp_create_compacted_topic():
    t = KP_PREFIX + "-compacted"
    kp_create_topic(t, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"})
    cfg = kp_topic_config(t)
    check(cfg.get("cleanup.policy") == "compact", f"cleanup.policy={cfg.get('cleanup.policy')!r}")
    check(cfg.get("min.cleanable.dirty.ratio") == "0.1", f"min.cleanable.dirty.ratio={cfg.get('min.cleanable.dirty.ratio')!r}")
    try:
        kp_create_topic(KP_PREFIX + "-shred", {"cleanup.policy": "shred"})
    except kafka.errors.InvalidConfigurationError:
        pass
    else:
        raise AssertionError("cleanup.policy=shred was accepted")


@scenario("produce.tombstone", "CreateTopics", "Produce", "Fetch", "ListOffsets", client="kafka-python")
def kp_produce_tombstones_and_consume():
    t = KP_PREFIX + "-tombstones"
    kp_create_topic(t, {"cleanup.policy": "compact"})
    offsets = kp_produce(t, WALK)
    check(offsets == [0, 1, 2], f"delivery offsets {offsets}")
    got = kp_read_from_beginning(t, 3)
    check(got == [(0, b"user-42", b"v1"), (1, b"user-42", b"v2"), (2, b"user-7", None)], f"read {got}")


@scenario("consume.from-beginning", "CreateTopics", "Produce", "Fetch", "ListOffsets", client="kafka-python")
def kp_consume_from_beginning():
    t = KP_PREFIX + "-from-beginning"
    kp_create_topic(t)
    want = [(b"k%d" % i, b"value-%d" % i) for i in range(500)]
    kp_produce(t, want, compression_type="gzip")
    got = kp_read_from_beginning(t, len(want))
    check([o for o, _, _ in got] == list(range(len(want))), "offsets not 0..499 in order")
    check([(k, v) for _, k, v in got] == want, "records differ from those produced")


def kp_group_member(t, group):
    c = kafka.KafkaConsumer(
        **KP_BASE,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
    )
    c.subscribe([t])
    return c


@scenario("group.classic", *GROUP_APIS, "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", client="kafka-python")
def kp_group_commit():
    """A member reads all records, commits, leaves; a second member starts at the commit."""
    t = KP_PREFIX + "-group"
    group = KP_PREFIX + "-group"
    kp_create_topic(t)
    kp_produce(t, [(b"k%d" % i, b"v%d" % i) for i in range(10)])
    c = kp_group_member(t, group)
    seen = []
    try:
        deadline = time.monotonic() + 60
        while len(seen) < 10 and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                seen.extend(r.value for r in recs)
        check(len(seen) == 10, f"group member read {len(seen)} of 10 records within 60s")
        c.commit()
        committed = c.committed(kafka.TopicPartition(t, 0))
        check(committed == 10, f"committed offset {committed}, want 10")
    finally:
        c.close(autocommit=False)
    kp_produce(t, [(b"late", b"after-commit")])
    c = kp_group_member(t, group)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                r = recs[0]
                check(r.value == b"after-commit", f"second member re-read {r.value!r} (offset {r.offset}), committed offsets ignored")
                return
        raise AssertionError("second member got nothing within 60s")
    finally:
        c.close(autocommit=False)


@scenario("security.sasl-plain-ssl", *SASL_APIS, "CreateTopics", "Produce", "Fetch", "ListOffsets", client="kafka-python")
def kp_sasl_plain_ssl():
    """kafka-python: PLAIN over SASL_SSL (CA from SLUICE_CA_PEM), produce and consume."""
    need_env(SLUICE_SASL_SSL_BOOTSTRAP=SASL_SSL, SLUICE_CA_PEM=CA_PEM)
    conf = dict(
        bootstrap_servers=SASL_SSL,
        security_protocol="SASL_SSL",
        ssl_cafile=CA_PEM,
        sasl_mechanism="PLAIN",
        sasl_plain_username=PLAIN_USER,
        sasl_plain_password=PLAIN_PASSWORD,
    )
    t = KP_PREFIX + "-plain-ssl"
    kp_create_topic(t)
    records = [(b"k1", b"v1"), (b"k2", b"v2")]
    check(kp_produce(t, records, **conf) == [0, 1], "offsets")
    got = kp_read_from_beginning(t, 2, **conf)
    check(got == [(0, b"k1", b"v1"), (1, b"k2", b"v2")], f"read {got}")


# ---- aiokafka (asyncio, pure-Python protocol implementation) --------------------------------

AIO_PREFIX = PREFIX + "-aio"


def run_async(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


async def aio_create_topic(name, config=None):
    a = aiokafka.admin.AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP, request_timeout_ms=int(TIMEOUT * 1000))
    await a.start()
    try:
        resp = await a.create_topics(
            [aiokafka.admin.NewTopic(name, num_partitions=1, replication_factor=1, topic_configs=config or {})],
            timeout_ms=int(TIMEOUT * 1000),
        )
        for e in resp.topic_errors:
            check(e[1] == 0, f"CreateTopics {e[0]}: error code {e[1]} {e[2:] }")
    finally:
        await a.close()


async def aio_produce(topic, records, **conf):
    p = aiokafka.AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, request_timeout_ms=int(TIMEOUT * 1000), **conf)
    await p.start()
    try:
        return [(await p.send_and_wait(topic, value=v, key=k, partition=0)).offset for k, v in records]
    finally:
        await p.stop()


async def aio_poll(c, count, timeout):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        for recs in (await c.getmany(timeout_ms=500)).values():
            out.extend((r.offset, r.key, r.value) for r in recs)
    return out


@scenario("produce.tombstone", "CreateTopics", "Produce", "Fetch", "ListOffsets", client="aiokafka")
def aio_produce_tombstones_and_consume():
    async def run():
        t = AIO_PREFIX + "-tombstones"
        await aio_create_topic(t, {"cleanup.policy": "compact"})
        offsets = await aio_produce(t, WALK, compression_type="gzip")
        check(offsets == [0, 1, 2], f"delivery offsets {offsets}")
        c = aiokafka.AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False)
        await c.start()
        try:
            tp = aiokafka.TopicPartition(t, 0)
            c.assign([tp])
            await c.seek_to_beginning(tp)
            got = await aio_poll(c, 3, TIMEOUT)
        finally:
            await c.stop()
        check(got == [(0, b"user-42", b"v1"), (1, b"user-42", b"v2"), (2, b"user-7", None)], f"read {got}")

    run_async(run())


@scenario("group.classic", *GROUP_APIS, "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", client="aiokafka")
def aio_group_commit():
    """A member reads all records, commits, leaves; a second member starts at the commit."""

    async def run():
        t = AIO_PREFIX + "-group"
        group = AIO_PREFIX + "-group"
        await aio_create_topic(t)
        await aio_produce(t, [(b"k%d" % i, b"v%d" % i) for i in range(10)])
        conf = dict(
            bootstrap_servers=BOOTSTRAP,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10000,
            heartbeat_interval_ms=1000,
        )
        c = aiokafka.AIOKafkaConsumer(t, **conf)
        await c.start()
        try:
            seen = await aio_poll(c, 10, 60)
            check(len(seen) == 10, f"group member read {len(seen)} of 10 records within 60s")
            await c.commit()
            committed = await c.committed(aiokafka.TopicPartition(t, 0))
            check(committed == 10, f"committed offset {committed}, want 10")
        finally:
            await c.stop()
        await aio_produce(t, [(b"late", b"after-commit")])
        c = aiokafka.AIOKafkaConsumer(t, **conf)
        await c.start()
        try:
            got = await aio_poll(c, 1, 60)
            check(got, "second member got nothing within 60s")
            check(got[0][2] == b"after-commit", f"second member re-read {got[0]}, committed offsets ignored")
        finally:
            await c.stop()

    run_async(run())


@scenario("security.sasl-plain-ssl", *SASL_APIS, "CreateTopics", "Produce", "Fetch", "ListOffsets", client="aiokafka")
def aio_sasl_plain_ssl():
    """aiokafka: PLAIN over SASL_SSL (an SSLContext trusting SLUICE_CA_PEM), produce and consume."""
    need_env(SLUICE_SASL_SSL_BOOTSTRAP=SASL_SSL, SLUICE_CA_PEM=CA_PEM)

    async def run():
        t = AIO_PREFIX + "-plain-ssl"
        await aio_create_topic(t)
        conf = dict(
            bootstrap_servers=SASL_SSL,
            request_timeout_ms=int(TIMEOUT * 1000),
            security_protocol="SASL_SSL",
            ssl_context=aiokafka.helpers.create_ssl_context(cafile=CA_PEM),
            sasl_mechanism="PLAIN",
            sasl_plain_username=PLAIN_USER,
            sasl_plain_password=PLAIN_PASSWORD,
        )
        records = [(b"a", b"1"), (b"b", b"2")]
        p = aiokafka.AIOKafkaProducer(**conf)
        await p.start()
        try:
            offs = [(await p.send_and_wait(t, value=v, key=k, partition=0)).offset for k, v in records]
        finally:
            await p.stop()
        check(offs == [0, 1], f"offsets {offs}")
        c = aiokafka.AIOKafkaConsumer(t, auto_offset_reset="earliest", enable_auto_commit=False, **conf)
        await c.start()
        try:
            got = await aio_poll(c, 2, TIMEOUT)
        finally:
            await c.stop()
        check(got == [(0, b"a", b"1"), (1, b"b", b"2")], f"read {got}")

    run_async(run())


CLIENT_VERSIONS = {
    "python": f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})",
    "kafka-python": kafka.__version__,
    "aiokafka": aiokafka.__version__,
}


def main():
    """Run the scenarios named on the command line (all when none), or of the clients
    named with --client=ID[,ID...]."""
    args = sys.argv[1:]
    clients = set()
    for a in [a for a in args if a.startswith("--client=")]:
        clients.update(a.split("=", 1)[1].split(","))
        args.remove(a)
    only = set(args)
    selected = [s for s in SCENARIOS if (not only or s[1] in only) and (not clients or s[0] in clients)]
    for client in dict.fromkeys(s[0] for s in selected):
        emit({"client": client, "client_version": CLIENT_VERSIONS[client]})
    failed = False
    for client, name, feature, apis, fn in selected:
        missing = [a for a in apis if a not in APIS]
        rec = {"client": client, "test": name, "feature": feature, "ms": 0}
        if missing:
            rec.update(status="skip", detail="broker does not advertise " + " ".join(missing))
        else:
            start = time.monotonic()
            try:
                fn()
                rec.update(status="pass", detail="")
            except Skip as e:
                rec.update(status="skip", detail=str(e))
            except Exception as e:  # every failure is reported, none stops the suite
                traceback.print_exc()
                rec.update(status="fail", detail=f"{type(e).__name__}: {e}"[:2000])
                failed = True
            rec["ms"] = int((time.monotonic() - start) * 1000)
        emit(rec)
        print(f"{rec['status'].upper()} {client}/{name}" + (f": {rec['detail']}" if rec["detail"] else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

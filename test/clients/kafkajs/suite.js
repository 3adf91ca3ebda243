// Sluice conformance scenarios with kafkajs (a pure-JavaScript client).
// Run by scripts/test-clients.sh with SLUICE_BOOTSTRAP, SLUICE_APIS, SLUICE_RESULTS_DIR and
// SLUICE_RUN_ID set (and, for the security scenarios, SLUICE_SASL_SSL_BOOTSTRAP, SLUICE_CA_PEM,
// SLUICE_SASL_PLAIN_USER/_PASSWORD and SLUICE_HARNESS, which skip when unset); results go to
// $SLUICE_RESULTS_DIR/kafkajs.jsonl. Exits 1 when any scenario failed.
'use strict';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes } = require('kafkajs');

const BOOTSTRAP = process.env.SLUICE_BOOTSTRAP;
const APIS = new Set((process.env.SLUICE_APIS || '').split(',').filter(Boolean));
const RESULTS = path.join(process.env.SLUICE_RESULTS_DIR, 'kafkajs.jsonl');
const PREFIX = `js-${process.env.SLUICE_RUN_ID || process.pid}`;
const TIMEOUT_MS = 30000;

const kafka = new Kafka({
  clientId: 'sluice-clients',
  brokers: [BOOTSTRAP],
  logLevel: logLevel.WARN,
  connectionTimeout: 10000,
  requestTimeout: TIMEOUT_MS,
  retry: { retries: 3 },
});

const scenarios = [];
function scenario(name, feature, apis, fn) {
  scenarios.push({ name, feature, apis, fn });
}

/** Thrown by a scenario that cannot run here (e.g. the broker has no such listener). */
class Skip extends Error {}

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function eventually(what, timeoutMs, fn) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not true within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}

let adminClient;
async function admin() {
  if (!adminClient) {
    adminClient = kafka.admin();
    await adminClient.connect();
  }
  return adminClient;
}

async function createTopic(topic, configs = {}) {
  const a = await admin();
  const configEntries = Object.entries(configs).map(([name, value]) => ({ name, value }));
  await a.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1, configEntries }], waitForLeaders: true, timeout: TIMEOUT_MS });
}

async function topicConfig(topic) {
  const a = await admin();
  const res = await a.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false });
  const out = {};
  for (const e of res.resources[0].configEntries) out[e.configName] = e.configValue;
  return out;
}

async function produce(topic, messages, opts = {}) {
  const p = kafka.producer(opts.producer || {});
  await p.connect();
  try {
    const res = await p.send({ topic, acks: -1, compression: opts.compression, messages: messages.map((m) => ({ partition: 0, ...m })) });
    return res;
  } finally {
    await p.disconnect();
  }
}

/** Reads count messages of the topic through a consumer group, from the beginning. */
async function consumeInGroup(topic, groupId, count) {
  const c = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000 });
  const got = [];
  await c.connect();
  try {
    await c.subscribe({ topics: [topic], fromBeginning: true });
    await c.run({
      eachMessage: async ({ message }) => {
        got.push({ offset: Number(message.offset), key: message.key && message.key.toString(), value: message.value === null ? null : message.value.toString() });
      },
    });
    await eventually(`group ${groupId} read ${count} messages`, 60000, () => got.length >= count);
  } finally {
    await c.disconnect();
  }
  return got;
}

scenario('metadata', 'metadata', ['Metadata', 'CreateTopics'], async () => {
  const t = `${PREFIX}-metadata`;
  await createTopic(t);
  const md = await (await admin()).fetchTopicMetadata({ topics: [t] });
  check(md.topics.length === 1 && md.topics[0].partitions.length === 1, `metadata ${JSON.stringify(md)}`);
  check(md.topics[0].partitions[0].leader >= 0, `no leader: ${JSON.stringify(md.topics[0].partitions[0])}`);
});

scenario('create-compacted-topic', 'admin.create-topic', ['CreateTopics', 'Metadata', 'DescribeConfigs'], async () => {
  const t = `${PREFIX}-compacted`;
  await createTopic(t, { 'cleanup.policy': 'compact' });
  const topics = await (await admin()).listTopics();
  check(topics.includes(t), `${t} not listed`);
});

scenario('describe-configs', 'admin.describe-configs', ['CreateTopics', 'DescribeConfigs'], async () => {
  const t = `${PREFIX}-describe`;
  await createTopic(t, { 'cleanup.policy': 'compact' });
  const cfg = await topicConfig(t);
  check(cfg['cleanup.policy'] === 'compact', `cleanup.policy=${cfg['cleanup.policy']}`);
  check(cfg['retention.ms'] === '604800000', `default retention.ms=${cfg['retention.ms']}`);
});

scenario('invalid-cleanup-policy', 'admin.invalid-config', ['CreateTopics', 'Metadata'], async () => {
  const t = `${PREFIX}-shred`;
  let err;
  try {
    await createTopic(t, { 'cleanup.policy': 'shred' });
  } catch (e) {
    err = e;
  }
  check(err, 'cleanup.policy=shred was accepted');
  const types = [err.type, ...((err.errors || []).map((e) => e.type))];
  check(types.includes('INVALID_CONFIG'), `want INVALID_CONFIG, got ${err.name}: ${err.message} ${JSON.stringify(types)}`);
  const topics = await (await admin()).listTopics();
  check(!topics.includes(t), `${t} exists after a refused create`);
});

scenario('alter-configs-cleanup-policy', 'admin.alter-configs-legacy', ['CreateTopics', 'AlterConfigs', 'DescribeConfigs'], async () => {
  const t = `${PREFIX}-alter`;
  await createTopic(t);
  const a = await admin();
  await a.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: t, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] });
  const cfg = await topicConfig(t);
  check(cfg['cleanup.policy'] === 'compact', `after alterConfigs: cleanup.policy=${cfg['cleanup.policy']}`);
  let err;
  try {
    await a.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: t, configEntries: [{ name: 'cleanup.policy', value: 'shred' }] }] });
  } catch (e) {
    err = e;
  }
  check(err, 'alterConfigs accepted cleanup.policy=shred');
  check(err.type === 'INVALID_CONFIG', `want INVALID_CONFIG, got ${err.name} ${err.type}: ${err.message}`);
  const after = await topicConfig(t);
  check(after['cleanup.policy'] === 'compact', `a refused alter changed cleanup.policy to ${after['cleanup.policy']}`);
});

scenario('produce-tombstones', 'produce.tombstone', ['CreateTopics', 'Produce', 'Fetch', 'ListOffsets', 'FindCoordinator', 'JoinGroup', 'SyncGroup', 'Heartbeat', 'OffsetCommit', 'OffsetFetch'], async () => {
  const t = `${PREFIX}-tombstones`;
  await createTopic(t, { 'cleanup.policy': 'compact' });
  await produce(t, [{ key: 'user-42', value: 'v1' }, { key: 'user-42', value: 'v2' }, { key: 'user-7', value: null }]);
  const got = await consumeInGroup(t, `${PREFIX}-tombstones`, 3);
  const want = [{ offset: 0, key: 'user-42', value: 'v1' }, { offset: 1, key: 'user-42', value: 'v2' }, { offset: 2, key: 'user-7', value: null }];
  check(JSON.stringify(got) === JSON.stringify(want), `read ${JSON.stringify(got)}`);
});

scenario('produce-gzip', 'compression.gzip', ['CreateTopics', 'Produce', 'Fetch', 'ListOffsets', 'FindCoordinator', 'JoinGroup', 'SyncGroup', 'Heartbeat', 'OffsetCommit', 'OffsetFetch'], async () => {
  const t = `${PREFIX}-gzip`;
  await createTopic(t);
  const msgs = Array.from({ length: 100 }, (_, i) => ({ key: `k${i}`, value: `gzip-value-${i}-repetition-repetition` }));
  const res = await produce(t, msgs, { compression: CompressionTypes.GZIP });
  check(res[0].errorCode === 0 && res[0].baseOffset === '0', `produce response ${JSON.stringify(res)}`);
  const got = await consumeInGroup(t, `${PREFIX}-gzip`, 100);
  check(got.every((m, i) => m.offset === i && m.value === msgs[i].value), 'records differ from those produced');
});

scenario('idempotent-producer', 'produce.idempotent', ['CreateTopics', 'Produce', 'InitProducerID'], async () => {
  const t = `${PREFIX}-idempotent`;
  await createTopic(t);
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  try {
    for (let i = 0; i < 5; i++) {
      const res = await p.send({ topic: t, acks: -1, messages: Array.from({ length: 10 }, (_, j) => ({ partition: 0, key: `k${j}`, value: `batch-${i}-${j}` })) });
      check(res[0].errorCode === 0 && res[0].baseOffset === String(i * 10), `send ${i}: ${JSON.stringify(res)}`);
    }
  } finally {
    await p.disconnect();
  }
  const offsets = await (await admin()).fetchTopicOffsets(t);
  check(offsets[0].high === '50', `high watermark ${offsets[0].high}, want 50`);
});

scenario('group-consumer', 'group.classic', ['CreateTopics', 'Produce', 'Fetch', 'ListOffsets', 'FindCoordinator', 'JoinGroup', 'SyncGroup', 'Heartbeat', 'LeaveGroup', 'OffsetCommit', 'OffsetFetch'], async () => {
  const t = `${PREFIX}-group`;
  const group = `${PREFIX}-group`;
  await createTopic(t);
  await produce(t, Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })));
  const got = await consumeInGroup(t, group, 20);
  check(got.length === 20 && got.every((m, i) => m.value === `v${i}`), `read ${JSON.stringify(got.slice(0, 3))}...`);
  const committed = await (await admin()).fetchOffsets({ groupId: group, topics: [t] });
  const off = committed[0].partitions[0].offset;
  check(off === '20', `committed offset ${off}, want 20`);
});

const TXN_APIS = ['CreateTopics', 'Produce', 'Fetch', 'ListOffsets', 'InitProducerID', 'FindCoordinator', 'AddPartitionsToTxn', 'EndTxn'];

/** Every value of partition 0 up to the end, read by a group consumer with the given isolation. */
async function readValues(topic, groupId, readUncommitted, count) {
  const c = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, readUncommitted });
  const got = [];
  await c.connect();
  try {
    await c.subscribe({ topics: [topic], fromBeginning: true });
    await c.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()); } });
    await eventually(`${groupId} read ${count} messages`, 60000, () => got.length >= count);
  } finally {
    await c.disconnect();
  }
  return got;
}

scenario('transactions-commit-abort', 'transactions.commit-abort', [...TXN_APIS, 'JoinGroup', 'SyncGroup', 'Heartbeat', 'OffsetCommit', 'OffsetFetch'], async () => {
  const t = `${PREFIX}-txn`;
  await createTopic(t);
  const p = kafka.producer({ transactionalId: `${t}-tx`, idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  try {
    let tx = await p.transaction();
    await tx.send({ topic: t, messages: [{ partition: 0, key: 'a', value: 'committed-1' }, { partition: 0, key: 'b', value: 'committed-2' }] });
    await tx.commit();
    tx = await p.transaction();
    await tx.send({ topic: t, messages: [{ partition: 0, key: 'c', value: 'aborted-1' }] });
    await tx.abort();
    tx = await p.transaction();
    await tx.send({ topic: t, messages: [{ partition: 0, key: 'd', value: 'committed-3' }] });
    await tx.commit();
  } finally {
    await p.disconnect();
  }
  const committed = await readValues(t, `${t}-rc`, false, 3);
  check(JSON.stringify(committed) === JSON.stringify(['committed-1', 'committed-2', 'committed-3']), `read_committed saw ${JSON.stringify(committed)}`);
  const all = await readValues(t, `${t}-ru`, true, 4);
  check(all.includes('aborted-1'), `read_uncommitted saw ${JSON.stringify(all)}`);
});

scenario('transactions-send-offsets', 'transactions.send-offsets', [...TXN_APIS, 'AddOffsetsToTxn', 'TxnOffsetCommit', 'OffsetFetch'], async () => {
  const t = `${PREFIX}-txn-offsets`;
  const group = `${PREFIX}-txn-group`;
  await createTopic(t);
  const p = kafka.producer({ transactionalId: `${t}-tx`, idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  try {
    const tx = await p.transaction();
    await tx.send({ topic: t, messages: [{ partition: 0, key: 'k', value: 'v' }] });
    await tx.sendOffsets({ consumerGroupId: group, topics: [{ topic: t, partitions: [{ partition: 0, offset: '7' }] }] });
    await tx.commit();
  } finally {
    await p.disconnect();
  }
  const committed = await (await admin()).fetchOffsets({ groupId: group, topics: [t] });
  check(committed[0].partitions[0].offset === '7', `committed offset ${committed[0].partitions[0].offset}, want 7`);
});

// ---- security: the SASL_SSL listener -------------------------------------------------------

const SASL_SSL = process.env.SLUICE_SASL_SSL_BOOTSTRAP || '';
const CA_PEM = process.env.SLUICE_CA_PEM || '';
const PLAIN_USER = process.env.SLUICE_SASL_PLAIN_USER || 'alice';
const PLAIN_PASSWORD = process.env.SLUICE_SASL_PLAIN_PASSWORD || 'alice-secret';
const SASL_APIS = ['SASLHandshake', 'SASLAuthenticate'];

function needSaslSsl() {
  if (!SASL_SSL || !CA_PEM) throw new Skip('not set: SLUICE_SASL_SSL_BOOTSTRAP or SLUICE_CA_PEM (no such listener)');
}

/** A client on the SASL_SSL listener (TLS trusting the suite's CA) logging in with sasl. */
function saslSslKafka(sasl, extra = {}) {
  needSaslSsl();
  return new Kafka({
    clientId: 'sluice-clients-sasl',
    brokers: [SASL_SSL],
    ssl: { ca: [fs.readFileSync(CA_PEM)] },
    sasl,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10000,
    requestTimeout: TIMEOUT_MS,
    retry: { retries: 3 },
    ...extra,
  });
}

/** Produces three records to t (created through the PLAINTEXT listener) and reads them back with client k. */
async function secureRoundTrip(k, t) {
  await createTopic(t);
  const p = k.producer();
  await p.connect();
  try {
    await p.send({ topic: t, acks: -1, messages: ['v0', 'v1', 'v2'].map((value, i) => ({ partition: 0, key: `k${i}`, value })) });
  } finally {
    await p.disconnect();
  }
  const c = k.consumer({ groupId: `${t}-group`, sessionTimeout: 10000, heartbeatInterval: 1000 });
  const got = [];
  await c.connect();
  try {
    await c.subscribe({ topics: [t], fromBeginning: true });
    await c.run({ eachMessage: async ({ message }) => { got.push(`${message.offset}:${message.key}=${message.value}`); } });
    await eventually(`read 3 messages of ${t} over SASL_SSL`, 60000, () => got.length >= 3);
  } finally {
    await c.disconnect();
  }
  check(got.join(',') === '0:k0=v0,1:k1=v1,2:k2=v2', `read ${got}`);
}

scenario('security-sasl-plain-ssl', 'security.sasl-plain-ssl',
  [...SASL_APIS, 'CreateTopics', 'Metadata', 'Produce', 'Fetch', 'ListOffsets', 'FindCoordinator', 'JoinGroup', 'SyncGroup'],
  async () => {
    const k = saslSslKafka({ mechanism: 'plain', username: PLAIN_USER, password: PLAIN_PASSWORD });
    await secureRoundTrip(k, `${PREFIX}-plain-ssl`);
    // The SASL_SSL listener advertises itself.
    const a = k.admin();
    await a.connect();
    try {
      const cluster = await a.describeCluster();
      const got = cluster.brokers.map((b) => `${b.host}:${b.port}`);
      check(got.join(',') === SASL_SSL, `SASL_SSL listener advertises ${got}`);
    } finally {
      await a.disconnect();
    }
  });

scenario('security-scram-sha-256-ssl', 'security.scram',
  [...SASL_APIS, 'AlterUserSCRAMCredentials', 'CreateTopics', 'Metadata', 'Produce', 'Fetch', 'ListOffsets', 'FindCoordinator', 'JoinGroup', 'SyncGroup'],
  async () => {
    needSaslSsl();
    if (!process.env.SLUICE_HARNESS) throw new Skip('not set: SLUICE_HARNESS (creates the SCRAM user; kafkajs has no API for it)');
    const user = `${PREFIX}-scram256`;
    const password = 'kafkajs-scram-secret';
    // kafkajs cannot create SCRAM users: the suite's harness does it through the PLAINTEXT listener.
    execFileSync(process.env.SLUICE_HARNESS, ['scram-user', '-bootstrap', BOOTSTRAP, '-user', user, '-password', password,
      '-mechanism', 'SCRAM-SHA-256'], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 60000 });
    await secureRoundTrip(saslSslKafka({ mechanism: 'scram-sha-256', username: user, password }), `${PREFIX}-scram256`);
  });

scenario('security-wrong-password', 'security.wrong-password', [...SASL_APIS, 'Metadata'], async () => {
  for (const sasl of [
    { mechanism: 'plain', username: PLAIN_USER, password: `not-${PLAIN_PASSWORD}` },
    { mechanism: 'scram-sha-256', username: `${PREFIX}-nobody`, password: 'nothing' },
  ]) {
    const a = saslSslKafka(sasl, { retry: { retries: 0 } }).admin();
    let err;
    try {
      await a.connect();
      await a.listTopics();
    } catch (e) {
      err = e;
    } finally {
      await a.disconnect();
    }
    check(err, `${sasl.mechanism} login with a wrong password succeeded`);
    check(err.name === 'KafkaJSSASLAuthenticationError' || (err.cause && err.cause.name === 'KafkaJSSASLAuthenticationError'),
      `${sasl.mechanism}: want KafkaJSSASLAuthenticationError, got ${err.name}: ${err.message}`);
  }
});

async function main() {
  const only = new Set(process.argv.slice(2));
  const version = require('kafkajs/package.json').version;
  fs.appendFileSync(RESULTS, JSON.stringify({ client: 'kafkajs', client_version: version }) + '\n');
  let failed = false;
  for (const s of scenarios) {
    if (only.size && !only.has(s.name)) continue;
    const missing = s.apis.filter((a) => !APIS.has(a));
    const rec = { client: 'kafkajs', test: s.name, feature: s.feature, status: 'pass', detail: '', ms: 0 };
    if (missing.length) {
      rec.status = 'skip';
      rec.detail = `broker does not advertise ${missing.join(' ')}`;
    } else {
      const start = Date.now();
      try {
        await Promise.race([s.fn(), new Promise((_, rej) => setTimeout(() => rej(new Error('scenario timed out after 120 s')), 120000).unref())]);
      } catch (e) {
        if (e instanceof Skip) {
          rec.status = 'skip';
          rec.detail = e.message;
        } else {
          console.error(e);
          rec.status = 'fail';
          rec.detail = `${e.name}: ${e.message}`.slice(0, 2000);
          failed = true;
        }
      }
      rec.ms = Date.now() - start;
    }
    fs.appendFileSync(RESULTS, JSON.stringify(rec) + '\n');
    console.log(`${rec.status.toUpperCase()} kafkajs/${s.name}${rec.detail ? ': ' + rec.detail : ''}`);
  }
  if (adminClient) await adminClient.disconnect();
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);

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

// ---- security: the authorizer (a second broker, SLUICE_ACL_*) ----------------------------------

const ACL = process.env.SLUICE_ACL_BOOTSTRAP || '';

const ACL_USER = `${process.env.SLUICE_ACL_USER || 'alice'}-kafkajs`; // this client's own user: no other scenario's ACLs help it

function aclKafka(username, password) {
  return new Kafka({
    clientId: 'sluice-clients-acl',
    brokers: [ACL],
    sasl: { mechanism: 'plain', username, password },
    logLevel: logLevel.NOTHING, // the refusals below are expected; kafkajs would log each one
    connectionTimeout: 10000,
    requestTimeout: TIMEOUT_MS,
    retry: { retries: 1, initialRetryTime: 100 },
  });
}

/** The Kafka error type (e.g. TOPIC_AUTHORIZATION_FAILED) of a kafkajs error, looking through its causes. */
function errorTypes(e) {
  const out = [];
  for (let x = e, depth = 0; x && depth < 5; x = x.cause || x.originalError, depth++) {
    if (x.type) out.push(x.type);
    for (const inner of x.errors || []) out.push(...errorTypes(inner));
  }
  return out;
}

/**
 * fn must fail with the Kafka error type. kafkajs reports a refused FindCoordinator as
 * KafkaJSGroupCoordinatorNotFound without the broker's error: then the broker's audit line
 * (SLUICE_ACL_LOG) must show the denial of that resource ([resourceType, name]).
 */
async function expectError(what, type, fn, resource) {
  try {
    await fn();
  } catch (e) {
    await checkRefusal(what, type, e, resource);
    return;
  }
  throw new Error(`${what}: succeeded, want ${type}`);
}

async function checkRefusal(what, type, e, resource) {
  if (resource && e && e.name === 'KafkaJSGroupCoordinatorNotFound' && !errorTypes(e).includes(type)) {
    const [rt, name] = resource;
    const line = new RegExp(`authorization denied.* principal=User:${ACL_USER} .*resource_type=${rt} resource=${name} `);
    if (!process.env.SLUICE_ACL_LOG) throw new Skip(`kafkajs hides ${type} (${e.message}) and SLUICE_ACL_LOG is not set`);
    await eventually(`${what}: the broker's audit line for ${rt} ${name}`, 10000,
      () => fs.readFileSync(process.env.SLUICE_ACL_LOG, 'utf8').split('\n').some((l) => line.test(l)));
    return;
  }
  check(errorTypes(e).includes(type), `${what}: ${e && e.name}: ${e && e.message} (types ${errorTypes(e)}; want ${type})`);
}

/** Runs a group consumer of topic until it crashes with the error type; it must read nothing. */
async function expectConsumerRefused(what, k, groupId, topic, type, resource) {
  const c = k.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, retry: { retries: 0 } });
  const read = [];
  let crash;
  c.on(c.events.CRASH, (ev) => { crash = ev.payload.error; });
  await c.connect();
  try {
    // kafkajs asks for the topic's metadata when it subscribes: a topic it may not describe fails there.
    await c.subscribe({ topics: [topic], fromBeginning: true });
    await c.run({ eachMessage: async ({ message }) => { read.push(String(message.value)); } });
    await eventually(`${what} refused`, TIMEOUT_MS, () => crash !== undefined);
  } catch (e) {
    crash = e;
  } finally {
    await c.disconnect();
  }
  check(read.length === 0, `${what} read ${read}`);
  await checkRefusal(what, type, crash, resource);
}

scenario('security-acls', 'security.acls',
  [...SASL_APIS, 'CreateACLs', 'DescribeACLs', 'DeleteACLs', 'CreateTopics', 'Produce', 'Fetch', 'ListOffsets',
    'FindCoordinator', 'JoinGroup', 'SyncGroup', 'OffsetCommit', 'OffsetFetch', 'InitProducerID', 'AddPartitionsToTxn', 'EndTxn'],
  async () => {
    if (!ACL) throw new Skip('not set: SLUICE_ACL_BOOTSTRAP (no broker with the authorizer)');
    const { AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = require('kafkajs');
    const principal = `User:${ACL_USER}`;
    const t = `${PREFIX}-acl`;
    const g = `${PREFIX}-acl-group`;
    const tx = `${PREFIX}-acl-tx`;
    const created = `${PREFIX}-acl-new`;
    const su = aclKafka(process.env.SLUICE_ACL_ADMIN_USER || 'admin', process.env.SLUICE_ACL_ADMIN_PASSWORD || 'admin-secret');
    const al = aclKafka(ACL_USER, process.env.SLUICE_ACL_PASSWORD || 'alice-secret');
    const sa = su.admin();
    const aa = al.admin();
    await sa.connect();
    await aa.connect();
    const send = async (k, value) => {
      const p = k.producer();
      await p.connect();
      try {
        await p.send({ topic: t, acks: -1, messages: [{ partition: 0, value }] });
      } finally {
        await p.disconnect();
      }
    };
    const endOffset = async () => (await sa.fetchTopicOffsets(t))[0].high;
    // Without waiting for leaders: that asks for the topic's metadata, and Create does not imply Describe.
    const createIn = (a, topic) => a.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: false,
      timeout: TIMEOUT_MS });
    try {
      await createIn(sa, t);
      await send(su, 'by-admin');

      // Without ACLs: every family refused with Kafka's error.
      await expectError('alice creates a topic', 'TOPIC_AUTHORIZATION_FAILED', () => createIn(aa, created));
      await expectError('alice lists ACLs', 'CLUSTER_AUTHORIZATION_FAILED', () => aa.describeAcls({
        resourceType: AclResourceTypes.ANY, resourcePatternType: ResourcePatternTypes.ANY,
        operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY,
      }));
      await expectError('alice produces', 'TOPIC_AUTHORIZATION_FAILED', () => send(al, 'denied'));
      await expectConsumerRefused("alice's consumer", al, g, t, 'TOPIC_AUTHORIZATION_FAILED');
      await expectError("alice fetches the group's offsets", 'GROUP_AUTHORIZATION_FAILED', () => aa.fetchOffsets({ groupId: g, topics: [t] }),
        ['GROUP', g]);
      // kafkajs's idempotent producer asks for a producer id without its transactional id when it connects:
      // Kafka wants IdempotentWrite on the cluster or Write on some topic for that.
      await expectError("alice's idempotent producer", 'CLUSTER_AUTHORIZATION_FAILED', async () => {
        const p = al.producer({ idempotent: true, maxInFlightRequests: 1 });
        try {
          await p.connect();
        } finally {
          await p.disconnect();
        }
      });
      await expectError("alice's transactional producer", 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', async () => {
        const p = al.producer({ transactionalId: tx, maxInFlightRequests: 1 });
        await p.connect();
        try {
          await p.transaction();
        } finally {
          await p.disconnect();
        }
      }, ['TRANSACTIONAL_ID', tx]);

      // A denied request changed nothing: no record, no topic, no group.
      check(await endOffset() === '1', `end offset after alice's denied produce: ${await endOffset()} (want 1)`);
      check(!(await sa.listTopics()).includes(created), `${created} exists after a denied CreateTopics`);
      check(!(await sa.listGroups()).groups.some((x) => x.groupId === g), `${g} exists after denied group requests`);

      // ACLs created with the admin API: the topic's first, so that the consumer's refusal is the group's.
      const acl = (resourceType, resourceName, resourcePatternType, operation) => ({
        resourceType, resourceName, resourcePatternType, principal, host: '*', operation, permissionType: AclPermissionTypes.ALLOW,
      });
      const topicAcls = [
        acl(AclResourceTypes.TOPIC, t, ResourcePatternTypes.LITERAL, AclOperationTypes.WRITE),
        acl(AclResourceTypes.TOPIC, t, ResourcePatternTypes.LITERAL, AclOperationTypes.READ),
      ];
      await sa.createAcls({ acl: topicAcls });
      await expectConsumerRefused("alice's consumer (Read on the topic, not the group)", al, `${g}-other`, t,
        'GROUP_AUTHORIZATION_FAILED', ['GROUP', `${g}-other`]);
      const more = [
        ...topicAcls,
        acl(AclResourceTypes.GROUP, g, ResourcePatternTypes.LITERAL, AclOperationTypes.READ),
        acl(AclResourceTypes.TRANSACTIONAL_ID, tx, ResourcePatternTypes.LITERAL, AclOperationTypes.WRITE),
        acl(AclResourceTypes.TOPIC, created, ResourcePatternTypes.PREFIXED, AclOperationTypes.CREATE),
      ];
      await sa.createAcls({ acl: more.slice(topicAcls.length) });
      const mine = {
        resourceType: AclResourceTypes.ANY, resourcePatternType: ResourcePatternTypes.ANY, principal,
        operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY,
      };
      const listed = (await sa.describeAcls(mine)).resources.reduce((n, r) => n + r.acls.length, 0);
      check(listed === more.length, `describeAcls lists ${listed} of alice's ${more.length} ACLs`);

      check(await createIn(aa, created), `alice's CreateTopics of ${created} created nothing`);
      check((await sa.listTopics()).includes(created), `${created} not listed after alice created it`);
      await send(al, 'by-alice');
      const c = al.consumer({ groupId: g, sessionTimeout: 10000, heartbeatInterval: 1000 });
      const got = [];
      await c.connect();
      try {
        await c.subscribe({ topics: [t], fromBeginning: true });
        await c.run({ eachMessage: async ({ message }) => { got.push(String(message.value)); } });
        await eventually("alice's group consumer read 2 records", 60000, () => got.length >= 2);
      } finally {
        await c.disconnect(); // commits what it read
      }
      check(got.join(',') === 'by-admin,by-alice', `alice's group consumer read ${got}`);
      const offs = await aa.fetchOffsets({ groupId: g, topics: [t] });
      check(offs[0].partitions[0].offset === '2', `alice's committed offsets: ${JSON.stringify(offs)}`);
      const p = al.producer({ transactionalId: tx, idempotent: true, maxInFlightRequests: 1 });
      await p.connect();
      try {
        const txn = await p.transaction();
        await txn.send({ topic: t, acks: -1, messages: [{ partition: 0, value: 'in-txn' }] });
        await txn.commit();
      } finally {
        await p.disconnect();
      }
      check(await endOffset() === '4', `end offset after alice's transaction: ${await endOffset()} (want 4)`);

      // Removed again: refused again.
      const del = await sa.deleteAcls({ filters: [mine] });
      const removed = del.filterResponses[0].matchingAcls.length;
      check(removed === more.length, `deleteAcls removed ${removed} of ${more.length}`);
      await expectError('alice produces after deleteAcls', 'TOPIC_AUTHORIZATION_FAILED', () => send(al, 'denied-again'));
    } finally {
      await sa.disconnect();
      await aa.disconnect();
    }
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

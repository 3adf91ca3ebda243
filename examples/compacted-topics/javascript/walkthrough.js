// A compacted topic, step by step, with kafkajs.
//
// Create a topic with cleanup.policy=compact, write two versions of user-42 and a
// tombstone for user-7, read all three back, then wait for the cleaner and read
// again: user-42=v2 now comes first, at offset 1.
//
//   npm install kafkajs
//   node walkthrough.js [bootstrap] [topic]
//
// Defaults: localhost:9092 and walkthrough-js. SKIP_COMPACTION=1 stops after the
// first read; WAIT_SECONDS (default 60) bounds the wait for the cleaner.
// Exit status: 0 done, 1 a step failed, 3 the cleaner did not run in time.
'use strict';

const { Kafka, logLevel } = require('kafkajs');

const bootstrap = process.argv[2] || 'localhost:9092';
const topic = process.argv[3] || 'walkthrough-js';
const waitSeconds = Number(process.env.WAIT_SECONDS || 60);
const kafka = new Kafka({ clientId: 'walkthrough', brokers: [bootstrap], logLevel: logLevel.ERROR });

const show = (records) => records.map((r) => `offset ${r.offset}: ${r.key}=${r.value === null ? '<tombstone>' : r.value}`);

function expect(got, want) {
  const lines = show(got).slice(0, want.length);
  if (JSON.stringify(lines) !== JSON.stringify(want)) throw new Error(`want ${JSON.stringify(want)}, got ${JSON.stringify(show(got))}`);
}

// The first n records of the topic from the start of the log (a fresh group each time).
async function readAll(n) {
  const consumer = kafka.consumer({ groupId: `walkthrough-${Date.now()}-${Math.random()}` });
  const out = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        out.push({ offset: Number(message.offset), key: message.key.toString(), value: message.value === null ? null : message.value.toString() });
      },
    });
    const deadline = Date.now() + 15000;
    while (out.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  } finally {
    await consumer.disconnect();
  }
  return out.slice(0, n);
}

async function main() {
  // 1. A compacted topic; segment.ms and min.cleanable.dirty.ratio are low so that
  //    the cleaner picks this tiny topic up within seconds.
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{
        topic, numPartitions: 1, replicationFactor: 1,
        configEntries: [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'segment.ms', value: '1000' },
          { name: 'min.cleanable.dirty.ratio', value: '0.01' },
        ],
      }],
    });
  } finally {
    await admin.disconnect();
  }
  console.log(`created compacted topic ${topic}`);

  // 2. Two versions of user-42, then a tombstone (null value) for user-7.
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic, messages: [
      { key: 'user-42', value: 'v1' },
      { key: 'user-42', value: 'v2' },
      { key: 'user-7', value: null },
    ] });
  } finally {
    await producer.disconnect();
  }
  console.log('produced user-42=v1, user-42=v2 and a tombstone for user-7');

  // 3. All three are there before compaction.
  let got = await readAll(3);
  show(got).forEach((l) => console.log('   ' + l));
  expect(got, ['offset 0: user-42=v1', 'offset 1: user-42=v2', 'offset 2: user-7=<tombstone>']);
  if (process.env.SKIP_COMPACTION === '1') return 0;

  // 4. Wait for the cleaner: user-42=v1 goes, offsets stay as they were.
  console.log(`waiting up to ${waitSeconds}s for the cleaner...`);
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    got = await readAll(2);
    if (got.length > 0 && got[0].offset === 1) break;
    if (Date.now() > deadline) {
      console.error(`error: not compacted in time: the log still starts with ${JSON.stringify(show(got))}`);
      return 3;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  show(got).forEach((l) => console.log('   ' + l));
  expect(got, ['offset 1: user-42=v2', 'offset 2: user-7=<tombstone>']);
  return 0;
}

main().then((code) => process.exit(code), (e) => { console.error('error:', e.message); process.exit(1); });

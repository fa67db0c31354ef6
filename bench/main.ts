/**
 * `npm run bench`: the receiver and the worker against baselines measured in the same run, the
 * triage path under the API's rate limit, and memory. Prints a markdown report and writes it to
 * docs/benchmarks.md. Reports; never fails on a figure.
 *
 * Options: --quick (one short round each, for a smoke run), --out <file> (default
 * docs/benchmarks.md).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { format, resolveConfig } from 'prettier';
import { startEmbeddedRedis } from '../src/cli/embedded-redis.js';
import { benchLatency } from './latency-bench.js';
import { benchReplicaAcks } from './replica-ack-bench.js';
import { choosePinning } from './pinning.js';
import { benchReceiver } from './receiver-bench.js';
import { HEADLINE_CONCURRENCY, renderReport } from './report.js';
import { benchTriage } from './triage-bench.js';
import { benchWorker } from './worker-bench.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: 'docs/benchmarks.md' },
  },
});
const quick = values.quick;

const dir = await mkdtemp(join(tmpdir(), 'feedback-receiver-bench-'));
const redisServer = await startEmbeddedRedis({ dir, appendOnly: false });
const redis = new Redis(redisServer.url);
const pinning = choosePinning();
const redisPid = redisServer.process.pid;
if (redisPid !== undefined) pinning.pin(redisPid, 'rest');
pinning.pin(process.pid, 'rest');
const started = Date.now();
try {
  const receiver = await benchReceiver({
    redis,
    redisUrl: redisServer.url,
    redisPid,
    pinning,
    concurrencies: [10, 50, 200],
    workAloneAt: HEADLINE_CONCURRENCY,
    rounds: quick ? 1 : 5,
    otherRounds: quick ? 1 : 3,
    seconds: quick ? 2 : 5,
    warmupSeconds: quick ? 1 : 2,
  });
  // The worker under test runs in this process: it takes the server's core for the drains.
  pinning.pin(process.pid, 'server');
  const worker = await benchWorker({
    redis,
    redisUrl: redisServer.url,
    concurrencies: [1, 10, 50],
    rounds: quick ? 1 : 5,
    // Enough that a round lasts a second or more at concurrency 50, so its start and its
    // ramp-up weigh little against the steady rate a running worker sustains.
    jobs: quick ? 500 : 10_000,
  });
  pinning.pin(process.pid, 'rest');
  const latency = await benchLatency({
    redis,
    redisUrl: redisServer.url,
    pinning,
    rates: [100, 1_000],
    seconds: quick ? 2 : 10,
  });
  const replicaAcks = await benchReplicaAcks({
    pinning,
    perSecond: 500,
    seconds: quick ? 2 : 10,
  });
  const triage = await benchTriage({
    redisUrl: redisServer.url,
    deliveries: quick ? 200 : 1_000,
    limitPerSecond: 100,
  });
  const report = renderReport({
    date: new Date(),
    node: process.version,
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    minutes: (Date.now() - started) / 60_000,
    quick,
    pinning: pinning.description,
    receiver,
    worker,
    latency,
    replicaAcks,
    triage,
  });
  process.stdout.write(`\n${report.summary}\n`);
  // Formatted as the repository's own files are, so a committed report passes `npm run lint`.
  const markdown = await format(report.markdown, {
    ...(await resolveConfig(values.out)),
    parser: 'markdown',
  });
  await writeFile(values.out, markdown);
  process.stdout.write(`\nwritten to ${values.out}\n`);
} finally {
  redis.disconnect();
  await redisServer.stop();
  await rm(dir, { recursive: true, force: true });
}

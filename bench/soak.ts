/**
 * The soak: does a receiver and a worker that run for months stay bounded? It starts a private
 * Redis, the sandbox (5 API calls a minute, so the 429 path runs), `serve` and `work` as an
 * operator does, with short retention (DEDUPE_TTL_SECONDS 300, COMPLETED_JOB_RETENTION_SECONDS 60,
 * a quarantine of 2 000) so every cap is reached within minutes, and sends a bounded loop of
 * signed deliveries: of each 100, 80 new, 10 sent again, 5 invalid (quarantined), 2 oversized
 * (413), 3 with a wrong signature (401). Every `--every` deliveries it appends one JSON line to
 * `--out`: each process's RSS and heap used before and after a full GC (through the inspector;
 * the processes run with --expose-gc), the event loop lag, Redis's used_memory, the count of
 * each key pattern, and BullMQ's job counts per queue. A figure that keeps growing once every
 * cap is reached is a leak. It waits for the worker whenever the deliveries queue is more than
 * 3 000 behind, so a backlog does not read as growth. bench/what-we-tried.md has the last run.
 *
 *   npx tsc -p bench && npm run --silent build:lua -- dist-bench/src
 *   node dist-bench/bench/soak.js --deliveries 200000 [--similar on] [--every 10000] [--out soak.jsonl]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { appendFileSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { freePort } from '../src/cli/free-port.js';
import { CLI, here, rssMiB } from './processes.js';

const { values } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '200000' },
    similar: { type: 'string', default: 'off' },
    every: { type: 'string', default: '10000' },
    out: { type: 'string', default: 'soak.jsonl' },
  },
});
const TOTAL = Number(values.deliveries);
const EVERY = Number(values.every);
const SECRET = 'soak-secret-0123456789';
const PREFIX = 'feedback-receiver';
const logDir = tmpdir();

const children: ChildProcess[] = [];
// Whatever ends the soak, an error included, ends its processes too.
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
});
function start(name: string, args: string[], env: Record<string, string>): ChildProcess {
  const log = openSync(join(logDir, `soak-${name}.log`), 'w');
  const child = spawn(args[0]!, args.slice(1), {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', log, log],
    cwd: here('../..'),
  });
  children.push(child);
  return child;
}
async function stopAll(): Promise<void> {
  for (const child of children.reverse()) {
    if (child.exitCode !== null) continue;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }
}

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}
async function until(what: string, ready: () => Promise<boolean>, withinMs = 60_000) {
  const deadline = Date.now() + withinMs;
  while (!(await ready().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not ready within ${withinMs} ms`);
    await sleep(100);
  }
}

/** Evaluates an expression in a process through its inspector (Node's global WebSocket). */
async function inspector(port: number): Promise<(expression: string) => Promise<unknown>> {
  const [target] = JSON.parse((await get(port, '/json/list')).body) as {
    webSocketDebuggerUrl: string;
  }[];
  const ws = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  sockets.push(ws);
  let id = 0;
  const waiting = new Map<number, (value: unknown) => void>();
  ws.onmessage = (message) => {
    const reply = JSON.parse(String(message.data)) as {
      id: number;
      result?: { result?: { value?: unknown } };
    };
    waiting.get(reply.id)?.(reply.result?.result?.value);
    waiting.delete(reply.id);
  };
  return (expression) => {
    const n = ++id;
    const reply = new Promise<unknown>((resolve) => waiting.set(n, resolve));
    ws.send(
      JSON.stringify({
        id: n,
        method: 'Runtime.evaluate',
        params: { expression, returnByValue: true },
      }),
    );
    return reply;
  };
}
const sockets: WebSocket[] = [];
const MEMORY = `(() => { const before = process.memoryUsage().heapUsed; gc(); const m = process.memoryUsage();
  return { heapBefore: before, heapAfterGc: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }; })()`;

const [redisPort, servePort, serveMetrics, workMetrics, sandboxPort, serveInspect, workInspect] =
  await Promise.all(Array.from({ length: 7 }, freePort));
start(
  'redis',
  [
    'redis-server',
    '--port',
    String(redisPort),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ],
  {},
);
// ioredis connects again by itself until the server listens; the errors until then are expected.
const redis = new Redis({ host: '127.0.0.1', port: redisPort! }).on('error', () => undefined);
await until('redis', async () => (await redis.ping()) === 'PONG');
const common = {
  REDIS_URL: `redis://127.0.0.1:${redisPort}`,
  LOG_LEVEL: 'warn',
  DEDUPE_TTL_SECONDS: '300',
  COMPLETED_JOB_RETENTION_SECONDS: '60',
};
const node = (inspect: number | undefined) => [
  process.execPath,
  '--expose-gc',
  `--inspect=127.0.0.1:${inspect}`,
  CLI,
];
start(
  'sandbox',
  [process.execPath, CLI, 'sandbox', '--port', String(sandboxPort), '--rate-limit', '5'],
  {},
);
const serve = start('serve', [...node(serveInspect), 'serve'], {
  ...common,
  WEBHOOK_SECRET: SECRET,
  PORT: String(servePort),
  HOST: '127.0.0.1',
  METRICS_PORT: String(serveMetrics),
  BODY_LIMIT: '16kb',
  QUARANTINE_MAX_ENTRIES: '2000',
  QUARANTINE_MAX_BYTES: '16mb',
});
const work = start('work', [...node(workInspect), 'work'], {
  ...common,
  METRICS_PORT: String(workMetrics),
  HANDLERS: 'bench/soak-handlers.mjs',
  TRIAGE_RULES: 'examples/triage-rules.jsonc',
  TRIAGE_DRY_RUN: 'true',
  FEEDBACK_API_URL: `http://127.0.0.1:${sandboxPort}`,
  FEEDBACK_API_TOKEN: 'sandbox-token-company',
  FEEDBACK_API_RATE_LIMIT: '1000',
  SIMILAR: values.similar,
  SIMILAR_KEEP: '5000',
});
await until('serve', async () => (await get(serveMetrics!, '/readyz')).status === 200);
await until('work', async () => (await get(workMetrics!, '/readyz')).status === 200);
const evaluate = { serve: await inspector(serveInspect!), work: await inspector(workInspect!) };

const metric = (text: string, name: string) =>
  Number(
    text
      .split('\n')
      .find((line) => line.startsWith(`${name} `))
      ?.split(' ')[1] ?? NaN,
  );
/** A key up to its first segment that names one thing (a number, an id), then `*`. */
function pattern(key: string): string {
  const parts = key.split(':');
  const at = parts.findIndex((part) => /\d/.test(part) || part.length > 24);
  return at === -1 ? key : [...parts.slice(0, at), '*'].join(':');
}
const queues = new Map<string, Queue>();
async function sample(sent: number, answers: Record<string, number>): Promise<void> {
  const line: Record<string, unknown> = { at: new Date().toISOString(), sent, answers };
  for (const [name, child, port] of [
    ['serve', serve, serveMetrics],
    ['work', work, workMetrics],
  ] as const) {
    const text = (await get(port!, '/metrics')).body;
    line[name] = {
      rssMiB: rssMiB(child.pid),
      ...((await evaluate[name](MEMORY)) as object),
      lagP99Seconds: metric(text, 'feedback_receiver_nodejs_eventloop_lag_p99_seconds'),
    };
  }
  const keys: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'COUNT', 2000);
    cursor = next;
    for (const key of found) keys[pattern(key)] = (keys[pattern(key)] ?? 0) + 1;
  } while (cursor !== '0');
  const jobs: Record<string, unknown> = {};
  for (const meta of await redis.keys(`${PREFIX}:*:meta`)) {
    const name = meta.slice(PREFIX.length + 1, -':meta'.length);
    if (!queues.has(name)) {
      queues.set(
        name,
        new Queue(name, { connection: { host: '127.0.0.1', port: redisPort! }, prefix: PREFIX }),
      );
    }
    jobs[name] = await queues
      .get(name)!
      .getJobCounts('wait', 'active', 'delayed', 'completed', 'failed');
  }
  const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
  Object.assign(line, { redis: { usedMemory, dbsize: await redis.dbsize(), keys }, jobs });
  appendFileSync(values.out, `${JSON.stringify(line)}\n`);
  const [s, w] = [line.serve, line.work] as { rssMiB: number; heapAfterGc: number }[];
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  console.log(
    `${sent} sent: serve ${s!.rssMiB.toFixed(0)} MiB RSS, heap ${mib(s!.heapAfterGc)} MiB after GC; ` +
      `work ${w!.rssMiB.toFixed(0)} MiB, ${mib(w!.heapAfterGc)} MiB; Redis ${mib(usedMemory)} MiB`,
  );
}

// Records shaped as real feedback: the similar-feedback fixture's, with new ids and a word more.
const templates = readFileSync(here('../../test/fixtures/similar-webapp-200.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => (JSON.parse(line) as { record: Record<string, unknown> }).record);
const words = ['again', 'today', 'still', 'on mobile', 'after update', 'please fix', 'in firefox'];
const run = Date.now().toString(36);
let made = 0;
function fresh(): string {
  const n = ++made;
  const template = templates[n % templates.length]!;
  const word = words[(n * 7) % words.length]!;
  return JSON.stringify({
    ...template,
    id: `fb_${run}_${n}`,
    project_id: ['prj_shop', 'prj_app', 'prj_docs'][n % 3],
    title: `${String(template.title)} ${word}`,
    rating: (n % 5) + 1,
  });
}
const recent: string[] = [];
const oversized = JSON.stringify({ id: 'fb_big', title: 'x'.repeat(20_000) });
function delivery(i: number): { kind: string; body: string; secret?: string } {
  const r = i % 100;
  if (r < 80 || recent.length === 0) {
    const body = fresh();
    if (recent.length < 500) recent.push(body);
    else recent[i % 500] = body;
    return { kind: 'new', body };
  }
  if (r < 90) return { kind: 'again', body: recent[(i * 31) % recent.length]! };
  if (r < 95) return { kind: 'invalid', body: JSON.stringify({ id: i, title: ['not text'] }) };
  if (r < 97) return { kind: 'oversized', body: oversized };
  return { kind: 'wrong-secret', body: fresh(), secret: 'another-secret-0123456789' };
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function post({ body, secret = SECRET }: { body: string; secret?: string }): Promise<number> {
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  return new Promise((resolve) => {
    http
      .request(
        {
          host: '127.0.0.1',
          port: servePort,
          path: '/webhooks/feedback',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'x-ybug-signature': signature },
        },
        (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)),
      )
      .on('error', () => resolve(0))
      .end(body);
  });
}

writeFileSync(values.out, '');
const answers: Record<string, number> = {};
const deliveries = new Queue('deliveries', {
  connection: { host: '127.0.0.1', port: redisPort! },
  prefix: PREFIX,
});
let sent = 0;
await sample(0, answers);
while (sent < TOTAL) {
  const next = Math.min(TOTAL, sent + EVERY);
  while (sent < next) {
    const slice = Math.min(next, sent + 1000);
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < slice) {
          const d = delivery(sent++);
          const answer = `${d.kind} ${await post(d)}`;
          answers[answer] = (answers[answer] ?? 0) + 1;
        }
      }),
    );
    await until('the worker', async () => (await deliveries.getWaitingCount()) < 3000, 600_000);
  }
  await sample(sent, answers);
}
agent.destroy();
for (const socket of sockets) socket.close();
for (const queue of [...queues.values(), deliveries]) await queue.close();
redis.disconnect();
await stopAll();

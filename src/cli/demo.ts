import { randomBytes } from 'node:crypto';
/**
 * `npm run demo`: a private Redis, the sandbox, the receiver and a worker with the example triage
 * rules, all on 127.0.0.1; the hook registered the way `hooks register` does it; a handful of
 * records created in the sandbox, delivered, triaged, and shown before and after.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiClient } from '../api/client.js';
import { loadReceiverConfig, loadWorkerConfig } from '../config.js';
import { createLogger, type Logger } from '../logger.js';
import { deleteKeysUnder } from '../queue/delete-keys.js';
import {
  closeConnection,
  createProducerConnection,
  REFUSED_FOR_MS,
  waitForRedis,
} from '../queue/redis.js';
import { createRunReader } from '../runs/run-reader.js';
import { startReceiver } from '../receiver.js';
import { SANDBOX_TOKEN } from '../sandbox/seed.js';
import { startSandbox } from '../sandbox/server.js';
import type { FeedbackRecord } from '../webhooks/feedback-record.js';
import { startWorker } from '../worker-process.js';
import { TRIAGE_HANDLER_NAME } from '../worker/triage/triage-handler.js';
import type { Command } from './command.js';
import { startEmbeddedRedis } from './embedded-redis.js';
import { registerHook } from './register-hook.js';
import { STOP_SIGNALS } from './stop-on-signal.js';

const RULES = fileURLToPath(new URL('../../examples/triage-rules.jsonc', import.meta.url));
const PROJECT = 'prj_shop';
const TRIAGE_DEADLINE_MS = 30_000;

/** Varied records: each meets a different example rule, and the last meets none. */
const RECORDS: Partial<FeedbackRecord>[] = [
  { title: 'App crashes when I upload a photo', rating: 1 },
  { title: 'Pay button stays grey', url: 'https://shop.example.com/checkout', rating: 3 },
  { title: 'Nothing works as promised', rating: 1, user_data: { plan: 'enterprise' } },
  {
    title: 'Menu covers the basket on my phone',
    console_log_url: 'https://cdn.example.com/logs/menu.json',
    client_context: { browser: 'Safari', device_type: 'mobile' },
  },
  { title: 'Love the new order history', net_promoter_score: 10 },
  { title: 'Please add a dark mode', rating: 4 },
];

export const demoCommand: Command = {
  name: 'demo',
  summary: 'run everything locally against the sandbox and show auto-triage at work',
  help: `Usage: feedback-receiver demo [--keep] [--verbose]

Starts a private Redis (unless REDIS_URL is set: then its keys, all under a
prefix of its own, are removed at the end), the sandbox, the receiver and a
worker with examples/triage-rules.jsonc, all on 127.0.0.1; registers the hook;
creates a few feedback records; waits until each is triaged; prints them before
and after; and stops everything. --keep keeps everything running until Ctrl-C, and
prints the delivery console's URL and a login for it, the receiver's and the
sandbox's addresses, and the variables that point the CLI at them. --verbose shows every
component's log lines.`,
  options: { keep: { type: 'boolean' }, verbose: { type: 'boolean' } },
  async run(values) {
    const logger = createLogger({ level: values.verbose ? 'info' : 'silent' });
    const cleanup: (() => Promise<void>)[] = [];
    const stop = stopRequests();
    const step = <T>(label: string, run: () => Promise<T>) => stop.between(() => timed(label, run));
    try {
      const env = loadWorkerConfig();
      // A prefix of its own, so that in a Redis of yours (REDIS_URL) the demo's keys are told
      // apart from everything else, and removed at the end.
      const prefix = `demo-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
      let redisUrl = env.redisUrl;
      if (env.redisUrlFromEnv) {
        const { queuePrefix } = loadWorkerConfig({ REDIS_URL: redisUrl, QUEUE_PREFIX: prefix });
        cleanup.unshift(() => removeKeys(redisUrl, queuePrefix, logger));
      } else {
        const dir = await mkdtemp(join(tmpdir(), 'feedback-receiver-demo-'));
        cleanup.unshift(() => rm(dir, { recursive: true, force: true }));
        const redis = await step('Starting a private redis-server', () =>
          startEmbeddedRedis({ dir, appendOnly: false }),
        );
        cleanup.unshift(redis.stop);
        redisUrl = redis.url;
      }

      const sandbox = await step('Starting the sandbox (a stand-in for the feedback API)', () =>
        startSandbox({ logger, deliveryBackoffMs: 200 }),
      );
      cleanup.unshift(sandbox.close);

      const secret = randomBytes(32).toString('base64url');
      const adminToken = randomBytes(18).toString('base64url');
      const receiver = await step('Starting the receiver', () =>
        startReceiver(
          loadReceiverConfig({
            WEBHOOK_SECRET: secret,
            ADMIN_TOKEN: adminToken,
            PORT: '0',
            HOST: '127.0.0.1',
            REDIS_URL: redisUrl,
            QUEUE_PREFIX: prefix,
          }),
          logger,
        ),
      );
      cleanup.unshift(receiver.close);

      const api = createApiClient({ baseUrl: sandbox.url, token: SANDBOX_TOKEN });
      const hookUrl = `${receiver.url}/webhooks/feedback`;
      await step(`Registering ${hookUrl} as a hook of ${PROJECT}`, () =>
        registerHook(api, { projectId: PROJECT, url: hookUrl, secret }),
      );

      const worker = await step('Starting a worker with examples/triage-rules.jsonc', () =>
        startWorker(
          loadWorkerConfig({
            TRIAGE_RULES: RULES,
            FEEDBACK_API_URL: sandbox.url,
            FEEDBACK_API_TOKEN: SANDBOX_TOKEN,
            REDIS_URL: redisUrl,
            QUEUE_PREFIX: prefix,
            SHUTDOWN_TIMEOUT_SECONDS: '5',
            METRICS_PORT: '0',
          }),
          logger,
        ),
      );
      cleanup.unshift(worker.close);

      const before = await step(`Creating ${RECORDS.length} feedback records in the sandbox`, () =>
        Promise.all(RECORDS.map((fields) => createRecord(sandbox.url, fields))),
      );

      const rules = await step('Waiting until every record is triaged', async () => {
        const fired = new Map<string, string>();
        const deadline = Date.now() + TRIAGE_DEADLINE_MS;
        const runs = createRunReader(worker.deliveries, worker.runQueues);
        while (fired.size < before.length) {
          stop.check();
          for (const record of before) {
            if (fired.has(record.id)) continue;
            const run = await runs.find(`feedback.created:${record.id}`, TRIAGE_HANDLER_NAME);
            if (run === undefined || run.state === 'pending') continue;
            if (run.state !== 'completed')
              throw new Error(`triage of ${record.id} ${run.state}: ${run.reason ?? ''}`);
            const matched = (run.result as { matched?: string[] } | null)?.matched ?? [];
            fired.set(record.id, matched.join(', ') || '(none)');
          }
          if (Date.now() > deadline) {
            throw new Error(
              `only ${fired.size} of ${before.length} records were triaged within ${TRIAGE_DEADLINE_MS / 1000} s`,
            );
          }
          await sleep(50);
        }
        return fired;
      });

      const after = before.map((record) => sandbox.state.records.get(record.id)!);
      console.log(`\n${table(before, after, rules)}\n`);
      if (values.keep) {
        console.log(
          [
            `The delivery console: ${receiver.url}/admin`,
            `Log in with any user name and the password ${adminToken}`,
            `The receiver: ${hookUrl} (webhook secret ${secret})`,
            `The sandbox (the feedback API's stand-in): ${sandbox.url}, token ${SANDBOX_TOKEN}`,
            // What the CLI needs to reach this demo from another terminal: its Redis and key
            // prefix, the secret `send` signs with, the sandbox as the API (docs/demo.md). A
            // REDIS_URL of the user's own, which may hold a password, is not repeated.
            'For the CLI in another terminal, in this directory:',
            `  export ${cliEnvironment({
              redisUrl: env.redisUrlFromEnv ? undefined : redisUrl,
              prefix,
              secret,
              sandboxUrl: sandbox.url,
              receiverUrl: receiver.url,
            })}`,
            'Everything keeps running until Ctrl-C.\n',
          ].join('\n'),
        );
        await stop.requested;
      } else {
        console.log(
          'Run `npm run demo -- --keep` to keep it running and look around in the console.\n',
        );
      }
    } finally {
      await timed('Stopping everything', async () => {
        for (const stop of cleanup) await stop();
      });
    }
    // Everything is closed; should a library leave a timer behind, do not hang on it.
    setTimeout(() => process.exit(process.exitCode ?? 0), 2_000).unref();
  },
};

/**
 * The variables, as one `export` line, that point the CLI at the running demo. DEMO_RECEIVER_URL
 * is read by nothing but the shell: the `--url` the docs' `send` lines take.
 */
function cliEnvironment(demo: {
  redisUrl: string | undefined;
  prefix: string;
  secret: string;
  sandboxUrl: string;
  receiverUrl: string;
}): string {
  return Object.entries({
    ...(demo.redisUrl === undefined ? {} : { REDIS_URL: demo.redisUrl }),
    QUEUE_PREFIX: demo.prefix,
    WEBHOOK_SECRET: demo.secret,
    FEEDBACK_API_URL: demo.sandboxUrl,
    FEEDBACK_API_TOKEN: SANDBOX_TOKEN,
    DEMO_RECEIVER_URL: demo.receiverUrl,
  })
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
}

/** Removes what the demo wrote into the Redis at REDIS_URL, once everything else has stopped. */
async function removeKeys(redisUrl: string, prefix: string, logger: Logger): Promise<void> {
  const connection = createProducerConnection(redisUrl, logger);
  try {
    await waitForRedis(connection, redisUrl, { refusedForMs: REFUSED_FOR_MS });
    await deleteKeysUnder(connection, prefix);
  } finally {
    await closeConnection(connection);
  }
}

/**
 * The demo's stop signals (STOP_SIGNALS: Ctrl-C, or SIGHUP when the terminal of `--keep` closes),
 * taken from its first step. Node's default would end the process at once: while the demo starts
 * up, that left its private redis-server running, and its keys in a REDIS_URL of yours. Instead
 * the step under way ends, the next is not begun, and everything started is stopped. A second
 * signal exits at once.
 */
function stopRequests(): {
  /** Resolves at the first signal. */
  readonly requested: Promise<void>;
  /** Throws if a signal came. */
  check(): void;
  /** Runs `next`, unless a signal came; throws if one came before or while it ran. */
  between<T>(next: () => Promise<T>): Promise<T>;
} {
  let signal: NodeJS.Signals | undefined;
  let resolve!: () => void;
  const requested = new Promise<void>((settle) => (resolve = settle));
  const onSignal = (received: NodeJS.Signals) => {
    if (signal !== undefined) process.exit(1);
    signal = received;
    resolve();
  };
  for (const each of STOP_SIGNALS) process.on(each, onSignal);
  const check = () => {
    if (signal !== undefined) throw new Error(`stopped by ${signal} before the demo finished`);
  };
  async function between<T>(next: () => Promise<T>): Promise<T> {
    check();
    const value = await next();
    check();
    return value;
  }
  return { requested, check, between };
}

async function timed<T>(label: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  process.stdout.write(`• ${label} … `);
  try {
    const result = await run();
    process.stdout.write(`done (${Math.round(performance.now() - started)} ms)\n`);
    return result;
  } catch (error) {
    process.stdout.write('failed\n');
    throw error;
  }
}

async function createRecord(
  sandboxUrl: string,
  fields: Partial<FeedbackRecord>,
): Promise<FeedbackRecord> {
  const response = await fetch(`${sandboxUrl}/sandbox/projects/${PROJECT}/feedback`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(fields),
  });
  if (response.status !== 201) throw new Error(`the sandbox refused a record (${response.status})`);
  return (await response.json()) as FeedbackRecord;
}

function table(
  before: FeedbackRecord[],
  after: FeedbackRecord[],
  rules: Map<string, string>,
): string {
  const change = (from: unknown, to: unknown) => {
    const [a, b] = [String(from ?? '—'), String(to ?? '—')];
    return a === b ? a : `${a} → ${b}`;
  };
  const rows = before.map((record, index) => {
    const now = after[index]!;
    return [
      record.title ?? '',
      change(record.status, now.status),
      change(record.priority, now.priority),
      change(record.type, now.type),
      change(record.assignee?.name, now.assignee?.name),
      rules.get(record.id) ?? '',
    ];
  });
  const header = ['Title', 'Status', 'Priority', 'Type', 'Assignee', 'Rule that fired'];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join(
    '\n',
  );
}

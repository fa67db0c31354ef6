import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import { reportedUrl, runCli, startServe, type CliProcess } from '../helpers/cli-process.js';
import { sendRaw } from '../helpers/raw-request.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { START_TIMEOUT_MS } from '../../src/queue/redis.js';

const sh = promisify(execFile);
const SECRET = 'e2e-secret-4be1';

/** The first sh block of README.md after `marker`. */
function readmeBlock(marker: string): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const after = readme.slice(readme.indexOf(marker));
  const block = /```sh\n([\s\S]*?)```/.exec(after)?.[1];
  if (!readme.includes(marker) || !block)
    throw new Error(`README.md has no sh block after "${marker}"`);
  return block;
}

/** The README's "Try a delivery" commands, pointed at the receiver under test. */
function readmeWalkthrough(url: string): string {
  return readmeBlock('### Try a delivery').replaceAll('http://127.0.0.1:3000', url);
}

let receiver: CliProcess | undefined;
afterEach(async () => {
  if (receiver && receiver.child.exitCode === null) {
    receiver.child.kill('SIGKILL');
    await receiver.exited();
  }
  receiver = undefined;
});

async function startReceiver(env: Record<string, string>) {
  const started = await startServe(env);
  receiver = started.cli;
  return started.url;
}

describe('feedback-receiver serve', () => {
  it("runs the README's walk-through: openssl signs, curl posts, the job is in Redis", async () => {
    const prefix = `e2e-${randomUUID().slice(0, 8)}`;
    const redisUrl = inject('redisUrl');
    const url = await startReceiver({
      WEBHOOK_SECRET: 'dev-secret',
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
    });

    // The README's worker command: the example rules, in dry run.
    const worker = runCli(['work'], {
      TRIAGE_RULES: 'examples/triage-rules.jsonc',
      TRIAGE_DRY_RUN: 'true',
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
    });
    try {
      const { stdout } = await sh('bash', ['-euo', 'pipefail', '-c', readmeWalkthrough(url)]);
      expect(JSON.parse(stdout)).toEqual({ status: 'queued', id: 'feedback.created:fb_1' });
      await vi.waitFor(
        () =>
          expect(
            worker.output().includes('triage dry run: would PATCH'),
            `the dry-run line the README promises\n${worker.output()}`,
          ).toBeTruthy(),
        { timeout: 5_000 },
      );
      expect(worker.output()).toContain('"matched":["checkout-problems"]');
      expect(worker.output()).toContain('"patch":{"assignee_id":"usr_payments_team"}');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited();
    }

    // The README's redis-cli lines, against this test's Redis (as REDIS_URL, which they read)
    // and prefix.
    const lookup = readmeBlock('The job is in Redis')
      .replaceAll("'feedback-receiver:", `'${prefix}:`)
      .replaceAll('"feedback-receiver:', `"${prefix}:`);
    const { stdout: data } = await sh('bash', ['-euo', 'pipefail', '-c', lookup], {
      env: { PATH: process.env.PATH, REDIS_URL: redisUrl },
    });
    expect(JSON.parse(data).record).toEqual({
      id: 'fb_1',
      title: 'Pay button does nothing',
      url: 'https://shop.example.com/checkout',
    });
    expect(receiver?.output()).toContain('"msg":"delivery queued"');
    expect(receiver?.output()).not.toContain('dev-secret');
  });

  it('stops cleanly with exit code 0 on SIGTERM', async () => {
    await startReceiver({ WEBHOOK_SECRET: SECRET, REDIS_URL: inject('redisUrl') });
    receiver!.child.kill('SIGTERM');
    expect(await receiver!.exited()).toBe(0);
    expect(receiver!.output()).toContain('receiver stopped');
  });

  it('refuses to start without a secret, naming the variable', async () => {
    const cli = runCli(['serve'], { PORT: '0' });
    expect(await cli.exited()).toBe(1);
    expect(cli.output()).toMatch(/WEBHOOK_SECRET: required/);
    expect(cli.output()).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('refuses a wrong value with a message naming the variable', async () => {
    const cli = runCli(['serve'], { WEBHOOK_SECRET: SECRET, PORT: 'eighty' });
    expect(await cli.exited()).toBe(1);
    expect(cli.output()).toMatch(/PORT: expected a whole number/);
  });

  it('stops at start when REDIS_URL cannot be reached, naming it without the password', async () => {
    const port = await freePort();
    const cli = runCli(['serve'], {
      WEBHOOK_SECRET: SECRET,
      PORT: '0',
      REDIS_URL: `redis://:hunter2@127.0.0.1:${port}`,
    });
    expect(await cli.exited()).toBe(1);
    expect(cli.output()).toMatch(
      new RegExp(
        `REDIS_URL: cannot use Redis at redis://:\\*\\*\\*@127.0.0.1:${port}: nothing listens there \\(connection refused\\)`,
      ),
    );
    expect(cli.output()).not.toContain('hunter2');
    expect(cli.output()).not.toContain('receiver listening');
  });

  it('waits for a Redis that comes up after it, as where nothing orders the starts', async () => {
    const redis = await startRedisServer();
    await redis.shutdown();
    const cli = runCli(['serve'], { WEBHOOK_SECRET: SECRET, PORT: '0', REDIS_URL: redis.url });
    try {
      // The outage is the scenario: refused for half the start timeout, several times as long as
      // a one-off command would wait (REFUSED_FOR_MS), across several of ioredis's retries.
      await sleep(START_TIMEOUT_MS / 2);
      await redis.start();
      await reportedUrl(cli, 'receiver listening');
    } finally {
      cli.child.kill('SIGTERM');
      await cli.exited();
      await redis.stop();
    }
  });

  it.each(['serve', 'work'])(
    '%s stops at once when Redis refuses the password',
    async (command) => {
      // A Redis without ACL users ignores a password for the default user; not for another one.
      const url = `redis://nobody:hunter2@${new URL(inject('redisUrl')).host}`;
      const cli = runCli([command], {
        WEBHOOK_SECRET: SECRET,
        TRIAGE_RULES: 'examples/triage-rules.jsonc',
        TRIAGE_DRY_RUN: 'true',
        PORT: '0',
        REDIS_URL: url,
      });
      expect(await cli.exited(), cli.output()).toBe(1);
      expect(cli.output()).toMatch(
        /REDIS_URL: cannot use Redis at redis:\/\/nobody:\*\*\*@127\.0\.0\.1:\d+: WRONGPASS/,
      );
      expect(cli.output()).not.toContain('hunter2');
    },
  );

  it("answers what Node's parser refuses with a problem, on PORT and on METRICS_PORT", async () => {
    const url = await startReceiver({
      WEBHOOK_SECRET: 's',
      REDIS_URL: inject('redisUrl'),
      METRICS_PORT: '0',
    });
    const probes = await reportedUrl(
      receiver!,
      'receiver probes listening (/healthz, /readyz, /metrics)',
    );
    for (const base of [url, probes]) {
      const tooLarge = await sendRaw(base, {
        method: 'GET',
        path: '/healthz',
        headers: { 'x-padding': 'p'.repeat(20_000) },
      });
      expect(tooLarge.status, base).toBe(431);
      expect(problemIn(tooLarge.text)).toMatchObject({ code: 'HEADERS_TOO_LARGE' });
      const malformed = await sendRaw(base, { method: 'G@T', path: '/healthz' });
      expect(malformed.status, base).toBe(400);
      expect(problemIn(malformed.text)).toMatchObject({ code: 'BAD_REQUEST' });
    }
  });

  it('answers wrong usage with exit code 2', async () => {
    const cli = runCli(['serv'], {});
    expect(await cli.exited()).toBe(2);
    expect(cli.output()).toMatch(/unknown command "serv"/);
  });

  it('prints help for the command', async () => {
    const cli = runCli(['serve', '--help'], {});
    expect(await cli.exited()).toBe(0);
    expect(cli.output()).toMatch(/Usage: feedback-receiver serve/);
  });
});

/** The problem+json body of a raw answer. */
function problemIn(text: string): unknown {
  expect(text).toMatch(/\r\ncontent-type: application\/problem\+json\r\n/i);
  return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
}

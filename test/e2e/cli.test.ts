/**
 * The command line as a user drives it: the sandbox, serve and work as separate processes, and
 * the one-off commands against them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createQuarantine } from '../../src/queue/quarantine.js';
import { SANDBOX_STARTUP_TOKEN, SANDBOX_TOKEN } from '../../src/sandbox/seed.js';
import type { FeedbackRecord } from '../../src/webhooks/feedback-record.js';
import { reportedUrl, runCli, startServe, type CliProcess } from '../helpers/cli-process.js';
import {
  createRecord as createRecordIn,
  recordInSandbox as readRecord,
} from '../helpers/sandbox-client.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const prefix = `e2e-cli-${randomUUID().slice(0, 8)}`;
const background: CliProcess[] = [];
let sandboxUrl: string;
let receiverUrl: string;
let secret: string;
const ADMIN_TOKEN = randomBytes(16).toString('hex');

const redisEnv = () => ({ REDIS_URL: inject('redisUrl'), QUEUE_PREFIX: prefix });
const apiEnv = (token = SANDBOX_TOKEN) => ({
  FEEDBACK_API_URL: sandboxUrl,
  FEEDBACK_API_TOKEN: token,
});

/** Runs a one-off command to its end. */
async function cli(args: string[], env: Record<string, string> = {}) {
  const run = runCli(args, env);
  const code = await run.exited();
  return { code, output: run.output() };
}

const createRecord = (projectId: string, fields: Partial<FeedbackRecord>) =>
  createRecordIn(sandboxUrl, projectId, fields);
const recordInSandbox = (id: string) => readRecord(sandboxUrl, id);

beforeAll(async () => {
  const sandbox = runCli(['sandbox', '--port', '0'], {});
  background.push(sandbox);
  sandboxUrl = await reportedUrl(sandbox, 'sandbox listening');

  secret = randomBytes(32).toString('base64url');
  // The console on, and SIMILAR left at its default (off) here: only the worker groups.
  const serve = await startServe({ WEBHOOK_SECRET: secret, ADMIN_TOKEN, ...redisEnv() });
  receiverUrl = serve.url;
  const registered = await cli(
    ['hooks', 'register', '--project', 'prj_shop', '--url', `${receiverUrl}/webhooks/feedback`],
    // The secret as serve reads it, never as an argument.
    { ...apiEnv(), WEBHOOK_SECRET: secret },
  );
  expect(registered.code).toBe(0);
  background.push(serve.cli);
  const work = runCli(['work'], {
    SIMILAR: 'on',
    TRIAGE_RULES: join(ROOT, 'examples/triage-rules.jsonc'),
    ...apiEnv(),
    ...redisEnv(),
  });
  background.push(work);
  await vi.waitFor(
    () =>
      expect(work.output().includes('worker started'), `the worker\n${work.output()}`).toBeTruthy(),
    { timeout: 5_000 },
  );
}, 30_000);

afterAll(async () => {
  for (const process of background) process.child.kill('SIGTERM');
  await Promise.all(background.map((process) => process.exited()));
});

describe('feedback-receiver, end to end against the sandbox', () => {
  it('triages a record created in the sandbox, delivered through the registered hook', async () => {
    const record = await createRecord('prj_shop', {
      title: 'The app crashes on start',
      priority_id: 2,
    });
    const triaged = await vi.waitFor(
      async () => {
        const now = await recordInSandbox(record.id);
        expect(now.priority_id, 'the record to be triaged').toBe(4);
        return now;
      },
      { timeout: 10_000 },
    );
    expect(triaged).toMatchObject({ priority: 'Critical', type_id: 1, type: 'Bug' });
  });

  it('runs a handler again on what a search finds, once told --yes', async () => {
    const record = await createRecord('prj_shop', {
      title: 'It crashes after the backfill',
      priority_id: 2,
    });
    await vi.waitFor(async () => expect((await recordInSandbox(record.id)).priority_id).toBe(4), {
      timeout: 10_000,
    });
    const args = ['deliveries', 'run-again', '--handler', 'auto-triage', '--since', '1h'];
    // The history is written a moment after the run.
    const planned = await vi.waitFor(
      async () => {
        const result = await cli([...args, '--q', record.id], redisEnv());
        expect(result.output).toContain('1 delivery found; 1 run of auto-triage to queue');
        return result;
      },
      { timeout: 10_000 },
    );
    expect(planned).toMatchObject({ code: 0 });
    expect(planned.output).toContain('Nothing queued: add --yes to queue them.');
    const queued = await cli([...args, '--q', record.id, '--yes'], redisEnv());
    expect(queued).toMatchObject({ code: 0 });
    expect(queued.output).toContain('Queued 1 run.');
    const unknown = await cli(['deliveries', 'run-again', '--handler', 'nobody'], redisEnv());
    expect(unknown.code).toBe(1);
    expect(unknown.output).toMatch(/no worker has started with a handler named "nobody"/);
  });

  it('generates a strong secret and shows it once when none is given', async () => {
    const registered = await cli(
      ['hooks', 'register', '--project', 'prj_shop', '--url', 'http://127.0.0.1:9/elsewhere'],
      apiEnv(),
    );
    expect(registered.code).toBe(0);
    const generated = /shown this once.*\n\n\s+(\S+)\n/.exec(registered.output)?.[1] ?? '';
    expect(generated).toMatch(/^[\w-]{43}$/);
    expect(registered.output.split(generated)).toHaveLength(3); // the secret, and the serve line
  });

  it("registers the receiver's route for a URL without a path, as send posts to it", async () => {
    const registered = await cli(
      ['hooks', 'register', '--project', 'prj_shop', '--url', 'http://127.0.0.1:9'],
      { ...apiEnv(), WEBHOOK_SECRET: secret },
    );
    expect(registered.code, registered.output).toBe(0);
    // The line shows the hook as the API answered it: the URL it was given.
    expect(registered.output).toContain('-> http://127.0.0.1:9/webhooks/feedback\n');
  });

  it("refuses a delivery signed with a wrong secret, and the sandbox's retry is seen", async () => {
    const wrongSecretFile = join(await mkdtemp(join(tmpdir(), 'hook-secret-')), 'secret');
    await writeFile(wrongSecretFile, 'not-the-receivers-secret\n', { mode: 0o600 });
    const wrong = await cli(
      [
        'hooks',
        'register',
        '--project',
        'prj_app',
        '--url',
        `${receiverUrl}/webhooks/feedback`,
        '--secret-file',
        wrongSecretFile,
      ],
      apiEnv(),
    );
    expect(wrong.code).toBe(0);
    expect(wrong.output).not.toContain('not-the-receivers-secret'); // a given secret is not echoed
    const record = await createRecord('prj_app', { title: 'Signed with the wrong secret' });
    const attempts = await vi.waitFor(
      async () => {
        const all = (await (await fetch(`${sandboxUrl}/sandbox/deliveries`)).json()) as {
          recordId: string;
          status: number;
        }[];
        const mine = all.filter((attempt) => attempt.recordId === record.id);
        expect(mine.length, 'attempts to deliver the record').toBeGreaterThanOrEqual(2);
        return mine;
      },
      { timeout: 10_000 },
    );
    expect(attempts.slice(0, 2).map((attempt) => attempt.status)).toEqual([401, 401]);
  });

  it('lists a quarantined delivery, keeps it while still invalid, and replays one that passes', async () => {
    const bad = await createRecord('prj_shop', {
      title: 'Rated in words',
      rating: 'five' as never,
    });
    const listed = await vi.waitFor(
      async () => {
        const list = await cli(['quarantine', 'list'], redisEnv());
        expect(list.output, 'the quarantined delivery').toContain('rating');
        return list;
      },
      { timeout: 5_000 },
    );
    expect(listed.code).toBe(0);
    const id = /^(q-\S+)/m.exec(listed.output)?.[1] ?? '';
    const shown = await cli(['quarantine', 'show', id], redisEnv());
    expect(shown.output).toContain(`"id":"${bad.id}"`);

    const stillBad = await cli(['quarantine', 'replay', id], redisEnv());
    expect(stillBad.code).toBe(1);
    expect(stillBad.output).toMatch(/still invalid \(rating: .*\); kept/);

    // After a fix: a delivery quarantined by an older receiver whose schema was wrong, now valid.
    const fixed = await createRecord('prj_app', {
      title: 'Checkout crashes every time',
      priority_id: 1,
    });
    const connection = new Redis(inject('redisUrl'));
    try {
      await createQuarantine({ connection, prefix }).add({
        receivedAt: new Date().toISOString(),
        reason: 'schema',
        issues: [],
        headers: {},
        body: Buffer.from(JSON.stringify(await recordInSandbox(fixed.id))),
      });
    } finally {
      connection.disconnect();
    }
    const replayed = await cli(['quarantine', 'replay', '--all'], redisEnv());
    expect(replayed.output).toContain(`queued as feedback.created:${fixed.id}`);
    await vi.waitFor(
      async () =>
        expect(
          (await recordInSandbox(fixed.id)).priority_id,
          'the replayed delivery to be triaged',
        ).toBe(4),
      { timeout: 5_000 },
    );
  });

  it('says whose token it is, and that a token on the wrong plan has no API access', async () => {
    const ok = await cli(['whoami'], apiEnv());
    expect(ok).toEqual({
      code: 0,
      output: 'The token belongs to Dana Müller <dana@example.com> (usr_dana).\n',
    });
    const startup = await cli(['whoami'], apiEnv(SANDBOX_STARTUP_TOKEN));
    expect(startup.code).toBe(1);
    expect(startup.output).toMatch(/available only on the Company and Enterprise plans/);
    expect(startup.output).not.toContain(SANDBOX_STARTUP_TOKEN);
    const wrong = await cli(['whoami'], apiEnv('tok_revoked'));
    expect(wrong.output).toMatch(/missing, wrong or revoked/);
  });

  it('reads the token from --token-file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-'));
    const file = join(dir, 'token');
    await import('node:fs/promises').then((fs) => fs.writeFile(file, `${SANDBOX_TOKEN}\n`));
    const result = await cli(['whoami', '--token-file', file], { FEEDBACK_API_URL: sandboxUrl });
    expect(result.code).toBe(0);
  });

  it('signs and sends a generated record to the receiver', async () => {
    const sent = await cli(['send', '--url', receiverUrl], { WEBHOOK_SECRET: secret });
    expect(sent.code).toBe(0);
    expect(sent.output).toMatch(/^202 Accepted\n\{"status":"queued","id":"feedback\.created:fb_/);
    const refused = await cli(['send', '--url', receiverUrl], { WEBHOOK_SECRET: 'wrong' });
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(/^401 Unauthorized/);
  });

  it('lists the largest groups of similar feedback, their titles made safe, whatever its own SIMILAR', async () => {
    const titles = [
      'Invoice PDF download crashes \u001b[2Jinto zebra stripes',
      'invoice pdf download crashes into zebra stripes!!',
    ];
    for (const title of titles) {
      const record = await createRecord('prj_shop', {
        title,
        description: 'Downloading the invoice as a PDF crashes into a page of zebra stripes.',
      });
      // One after the other: the second is compared with the first once that one is routed.
      await vi.waitFor(async () => expect((await recordInSandbox(record.id)).priority_id).toBe(4), {
        timeout: 10_000,
      });
    }
    const listed = await vi.waitFor(
      async () => {
        // Without SIMILAR=on: the worker keeps the groups, and the CLI reads what Redis holds.
        const result = await cli(['groups', '--since', '1h', '--project', 'prj_shop'], redisEnv());
        expect(result.output).toMatch(
          /^ +2 {2}\S+Z {2}prj_shop {2}Invoice PDF download crashes \\x1b\[2Jinto zebra stripes$/m,
        );
        return result;
      },
      { timeout: 10_000 },
    );
    expect(listed.code).toBe(0);
    expect(listed.output).toMatch(/^Size {2}Last arrival/m);
    expect(listed.output).not.toContain('\u001b');
    // So does the console of a receiver with SIMILAR off: its API and its Groups page.
    const admin = { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } };
    const api = await fetch(`${receiverUrl}/admin/api/groups?since=1h&project=prj_shop`, admin);
    expect(api.status).toBe(200);
    const { groups } = (await api.json()) as { groups: { size: number }[] };
    expect(groups.map((group) => group.size)).toEqual([2]);
    const page = await fetch(`${receiverUrl}/admin/groups?project=prj_shop`, admin);
    expect(await page.text()).toContain('Invoice PDF download crashes');
    const other = await cli(['groups', '--project', 'prj_nobody'], redisEnv());
    expect(other).toMatchObject({ code: 0 });
    expect(other.output).toBe(
      'No groups: grouping holds no delivery of project prj_nobody in this Redis. Workers keep groups of similar feedback with SIMILAR=on, in their REDIS_URL and QUEUE_PREFIX.\n',
    );
    expect(other.output, 'said once').not.toContain('0 groups of 0');
    const wrong = await cli(['groups', '--since', 'yesterday'], redisEnv());
    expect(wrong.code).toBe(2);
    expect(wrong.output).toMatch(/--since: expected a number and a unit/);
  });

  it('lists a run that failed for good in the dead letter, and retries it', async () => {
    // A record the sandbox does not have: triage's PATCH gets a 404, which no retry can fix.
    const sent = await cli(['send', '--url', receiverUrl], { WEBHOOK_SECRET: secret });
    const key = /"id":"(feedback\.created:fb_[0-9a-f]+)"/.exec(sent.output)?.[1] ?? '';
    const failed = await vi.waitFor(
      async () => {
        const list = await cli(['deliveries', 'failed'], redisEnv());
        expect(list.output, 'the run in the dead letter').toContain(key);
        return list;
      },
      { timeout: 5_000 },
    );
    expect(failed.code).toBe(0);
    expect(failed.output).toContain(', 1 attempt, failed');
    expect(failed.output).toMatch(/The feedback API found nothing at PATCH .* \(404\)/);
    const runId = new RegExp(`^(\\S+)\\n  handler auto-triage, delivery ${key}`, 'm').exec(
      failed.output,
    )?.[1];
    expect(await cli(['deliveries', 'retry', runId!], redisEnv())).toEqual({
      code: 0,
      output: `Queued ${runId} again.\n`,
    });
    const missing = await cli(['deliveries', 'retry', 'no-such-run'], redisEnv());
    expect(missing.code).toBe(1);
    expect(missing.output).toMatch(/no failed run no-such-run/);
  });
});

describe('the logs of that whole run', () => {
  it('hold neither the webhook secret nor the API token, in any line of any process', () => {
    // sandbox, serve and work, after every test above sent traffic through them.
    const lines = background.flatMap((process) => process.output().split('\n'));
    expect(lines.length).toBeGreaterThan(20);
    expect(lines.filter((line) => line.includes(secret))).toEqual([]);
    expect(lines.filter((line) => line.includes(SANDBOX_TOKEN))).toEqual([]);
  });
});

describe('feedback-receiver usage', () => {
  const commands = [
    ['serve'],
    ['work'],
    ['start'],
    ['hooks', 'register'],
    ['whoami'],
    ['send'],
    ['deliveries', 'failed'],
    ['deliveries', 'retry'],
    ['deliveries', 'run-again'],
    ['quarantine', 'list'],
    ['quarantine', 'show'],
    ['quarantine', 'replay'],
    ['runs', 'upgrade'],
    ['sandbox'],
    ['demo'],
    ['healthcheck'],
    // The groups: their commands, each with its summary.
    ['hooks'],
    ['deliveries'],
    ['quarantine'],
    ['runs'],
  ];

  it.each(commands)('has help for %s', async (...command) => {
    const result = await cli([...command, '--help']);
    expect(result.code).toBe(0);
    expect(result.output).toMatch(new RegExp(`^Usage: feedback-receiver ${command.join(' ')}`));
  });

  it('answers no command at all with the help, on stderr, and exit code 2', async () => {
    const run = runCli([], {});
    let stdout = '';
    run.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    expect(await run.exited()).toBe(2);
    expect(stdout).toBe('');
    expect(run.output()).toMatch(/^Usage: feedback-receiver <command>/);
  });

  it.each([
    [['hooks'], /hooks needs one of: register/],
    [
      ['send', '--bogus'],
      /^feedback-receiver: send has no option --bogus; see feedback-receiver send --help\n$/,
    ],
    [['send', '--url'], /--url needs a value; see feedback-receiver send --help/],
    [['quarantine', 'replay', '--all=yes'], /--all takes no value/],
    [['quarantine', 'show'], /quarantine show takes 1 argument, got 0/],
    [['quarantine', 'replay', 'a', 'b'], /quarantine replay takes at most 1 argument, got 2/],
    [
      ['send', '--url', 'http://127.0.0.1:1'],
      /send signs with the receiver's secret: set WEBHOOK_SECRET \(or WEBHOOK_SECRET_FILE/,
    ],
    [['hooks', 'register', '--project', 'p'], /hooks register needs --url/],
    [
      ['hooks', 'register', '--project', 'p', '--url', 'https://x.example', '--secret', 's'],
      /--secret would put the secret in the process list .* use --secret-file <path>, or WEBHOOK_SECRET/,
    ],
    [['deliveries', 'retry'], /give one run id or --all/],
    [['deliveries', 'run-again'], /deliveries run-again needs --handler/],
    [
      ['deliveries', 'run-again', '--handler', 'x', '--since', '1y'],
      /^feedback-receiver: --since: expected a number/,
    ],
    [
      ['deliveries', 'run-again', '--handler', 'x', '--state', 'bogus'],
      /^feedback-receiver: --state: Invalid option: expected one of "running"\|"done"\|"failed"; see feedback-receiver deliveries run-again --help\n$/,
    ],
    [
      ['send', '--url', 'http://user:hunter2@127.0.0.1:1'],
      /^feedback-receiver: --url holds a user or password, which the receiver takes none of; see feedback-receiver send --help\n$/,
    ],
    [
      ['deliveries', 'failed', '--limit', '-1'],
      /^feedback-receiver: --limit is followed by -1: give --limit a value, or write --limit=-1 if that is it; see feedback-receiver deliveries failed --help\n$/,
    ],
    [
      ['quarantine', 'list', '--limit', '0'],
      /^feedback-receiver: --limit takes a whole number from 1 to 9007199254740991\n$/,
    ],
    [
      ['sandbox', '--host='],
      /^feedback-receiver: sandbox needs --host; see feedback-receiver sandbox --help\n$/,
    ],
    [
      ['sandbox', '--rate-limit', '0'],
      /^feedback-receiver: --rate-limit takes a whole number from 1 to 9007199254740991\n$/,
    ],
  ])('answers wrong usage %j with exit code 2 and one sentence', async (args, message) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.output).toMatch(message);
    expect(result.output.trim().split('\n')).toHaveLength(1);
  });

  it('refuses a hook URL that is not https, unless it is on this machine', async () => {
    const result = await cli(
      [
        'hooks',
        'register',
        '--project',
        'prj_shop',
        '--url',
        'http://hooks.example.com/webhooks/feedback',
      ],
      { FEEDBACK_API_URL: 'http://127.0.0.1:9', FEEDBACK_API_TOKEN: 'x' },
    );
    expect(result.code).toBe(2);
    expect(result.output).toMatch(/--url must be https/);
  });
});

describe('feedback-receiver demo', () => {
  it('triages every record as the example rules say, and prints the table', async () => {
    const demo = await cli(['demo']);
    expect(demo.code).toBe(0);
    for (const rule of [
      'crash-reports-are-urgent',
      'checkout-problems',
      'unhappy-paying-customers',
      'mobile-safari-with-logs',
      'praise',
    ]) {
      expect(demo.output).toContain(rule);
    }
    expect(demo.output).toMatch(/Please add a dark mode .*\(none\)/);
    expect(demo.output).toContain('Run `npm run demo -- --keep` to keep it running');
    expect(demo.output).toContain('Stopping everything … done');
  });

  it('with --keep, keeps running and shows the console until Ctrl-C', async () => {
    const demo = runCli(['demo', '--keep'], {});
    try {
      const [, consoleUrl, password] = await vi.waitFor(
        () => {
          const found =
            /The delivery console: (\S+)\nLog in with any user name and the password (\S+)/.exec(
              demo.output(),
            );
          expect(found, `the console's URL\n${demo.output()}`).not.toBeNull();
          return found!;
        },
        { timeout: 45_000, interval: 200 },
      );
      const page = await fetch(`${consoleUrl!}/deliveries`, {
        headers: { Authorization: `Basic ${Buffer.from(`me:${password}`).toString('base64')}` },
      });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('Please add a dark mode');
      expect((await fetch(consoleUrl!)).status).toBe(401);
    } finally {
      demo.child.kill('SIGINT');
    }
    expect(await demo.exited()).toBe(0);
    expect(demo.output()).toContain('Stopping everything … done');
  }, 60_000);

  it('with --keep, prints the variables with which the CLI fills its dead letter and quarantine', async () => {
    const demo = runCli(['demo', '--keep'], {});
    try {
      const exported = await vi.waitFor(
        () => {
          const found = /\n {2}export (.+)\n/.exec(demo.output());
          expect(found, `the CLI's variables\n${demo.output()}`).not.toBeNull();
          return found![1]!;
        },
        { timeout: 45_000, interval: 200 },
      );
      const env = Object.fromEntries(
        exported
          .split(' ')
          .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
      );
      expect(demo.output()).toContain(`(webhook secret ${env.WEBHOOK_SECRET})`);
      expect(demo.output()).toContain(
        `The sandbox (the feedback API's stand-in): ${env.FEEDBACK_API_URL}`,
      );

      // docs/demo.md: a generated record the sandbox does not know, whose PATCH gets a 404.
      expect((await cli(['send', '--url', env.DEMO_RECEIVER_URL!], env)).code).toBe(0);
      const notARecord = join(await mkdtemp(join(tmpdir(), 'demo-')), 'not-a-record.json');
      await writeFile(notARecord, 'not a feedback record');
      expect(
        (await cli(['send', '--url', env.DEMO_RECEIVER_URL!, '--file', notARecord], env)).code,
      ).toBe(0);

      const quarantined = await cli(['quarantine', 'list'], env);
      expect(quarantined.output).toContain('unparseable');
      await vi.waitFor(
        async () => {
          const failed = await cli(['deliveries', 'failed'], env);
          expect(failed.output).toContain('handler auto-triage');
          expect(failed.output).toMatch(/404/);
        },
        { timeout: 15_000, interval: 200 },
      );
    } finally {
      demo.child.kill('SIGINT');
    }
    expect(await demo.exited()).toBe(0);
  }, 90_000);
});

describe('feedback-receiver start', () => {
  it('starts its own Redis when REDIS_URL is unset, and says so first', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'start-'));
    const start = runCli(
      ['start'],
      {
        WEBHOOK_SECRET: 'start-secret',
        PORT: '0',
        HOST: '127.0.0.1',
        TRIAGE_RULES: join(ROOT, 'examples/triage-rules.jsonc'),
        TRIAGE_DRY_RUN: 'true',
      },
      { cwd },
    );
    try {
      const url = await reportedUrl(start, 'receiver listening');
      await vi.waitFor(async () => expect((await fetch(`${url}/readyz`)).status).toBe(200), {
        timeout: 15_000,
      });
      const first = JSON.parse(start.output().split('\n')[0]!) as { msg: string; dir: string };
      expect(first.msg).toBe('REDIS_URL not set: started a private redis-server');
      expect(first.dir).toBe(join(cwd, '.feedback-receiver/redis'));
    } finally {
      start.child.kill('SIGTERM');
    }
    expect(await start.exited()).toBe(0);
  });

  it('says how to get Redis when REDIS_URL is unset and redis-server is not on the PATH', async () => {
    const start = runCli(['start'], {
      WEBHOOK_SECRET: 's',
      PATH: '/nonexistent',
      TRIAGE_RULES: join(ROOT, 'examples/triage-rules.jsonc'),
      TRIAGE_DRY_RUN: 'true',
    });
    expect(await start.exited()).toBe(1);
    expect(start.output()).toMatch(/redis-server is not on the PATH: install Redis/);
  });
});

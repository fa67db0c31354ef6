/**
 * What the command line says when something is missing or wrong, and how it prints what senders
 * sent: each a real process, its messages and exit codes as a user sees them.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { createQuarantine } from '../../src/queue/quarantine.js';
import { runCli } from '../helpers/cli-process.js';
import { freePort } from '../helpers/free-port.js';

const RULES = fileURLToPath(new URL('../../examples/triage-rules.jsonc', import.meta.url));

/** Runs a one-off command to its end; stdout and stderr apart. */
async function cli(args: string[], env: Record<string, string> = {}) {
  const run = runCli(args, env);
  let stdout = '';
  run.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const code = await run.exited();
  return { code, output: run.output(), stdout };
}

/** One line, and no stack trace or JSON log line with it. */
function expectOneSentence(output: string) {
  expect(output.trim().split('\n'), output).toHaveLength(1);
  expect(output).not.toMatch(/^\s*at |^\{/m);
}

describe('send', () => {
  it('names the URL when nothing listens there', async () => {
    const url = `http://127.0.0.1:${await freePort()}/webhooks/feedback`;
    const result = await cli(['send', '--url', url], { WEBHOOK_SECRET: 's' });
    expect(result.code).toBe(1);
    expect(result.output).toContain(`nothing listens at ${url} (connection refused)`);
    expectOneSentence(result.output);
  });

  it('says which --file it cannot read', async () => {
    const result = await cli(
      ['send', '--url', 'http://127.0.0.1:1', '--file', '/nonexistent/delivery.json'],
      { WEBHOOK_SECRET: 's' },
    );
    expect(result.code).toBe(1);
    expect(result.output).toContain('cannot read --file /nonexistent/delivery.json: no such file');
    expect(result.output).not.toContain('ENOENT');
    expectOneSentence(result.output);
  });
});

describe('text from elsewhere, on the terminal', () => {
  it('shows the escapes and direction controls of what answers at --url, never obeys them', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('\u001b]0;owned\u0007\u001b[2Jok \u202Edesrever\nsecond line');
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const result = await cli(['send', '--url', `http://127.0.0.1:${port}/`], {
        WEBHOOK_SECRET: 's',
      });
      expect(result.code).toBe(0);
      expect(result.output).toContain(
        '200 OK\n\\x1b]0;owned\\x07\\x1b[2Jok \\u202edesrever\nsecond line',
      );
      for (const obeyed of ['\u001b', '\u0007', '\u202e'])
        expect(result.output).not.toContain(obeyed);
    } finally {
      server.close();
    }
  });

  it('shows the escapes in the hook the API answers hooks register with, never obeys them', async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(201, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'hook_\u001b]0;owned\u0007',
          event: 'feedback.created\u202E',
          target_url: 'https://hooks.example.com/\u001b[2J',
          active: true,
          created_at: '2026-11-28T09:00:00Z',
        }),
      );
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const result = await cli(
        ['hooks', 'register', '--project', 'prj_1', '--url', 'https://hooks.example.com/'],
        {
          FEEDBACK_API_URL: `http://127.0.0.1:${port}`,
          FEEDBACK_API_TOKEN: 't',
          WEBHOOK_SECRET: 's',
        },
      );
      expect(result.code, result.output).toBe(0);
      expect(result.output).toContain(
        'Registered hook hook_\\x1b]0;owned\\x07 on project prj_1: feedback.created\\u202e -> https://hooks.example.com/\\x1b[2J',
      );
      for (const obeyed of ['\u001b', '\u0007', '\u202e'])
        expect(result.output).not.toContain(obeyed);
    } finally {
      server.close();
    }
  });

  it('shows an option it does not know, escaped, in its one sentence', async () => {
    const result = await cli(['groups', '--\u001b[2J\u202Ex']);
    expect(result.code).toBe(2);
    expect(result.output).toContain('groups has no option --\\x1b[2J\\u202ex');
    for (const obeyed of ['\u001b', '\u202e']) expect(result.output).not.toContain(obeyed);
    expectOneSentence(result.output);
  });
});

describe('a span of zero', () => {
  it.each([
    [['groups', '--since', '0m']],
    [['groups', '--since', '00h']],
    [['deliveries', 'run-again', '--handler', 'triage', '--since', '0d']],
  ])('%j is a usage error, in one sentence', async (args) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.output).toMatch(/since: expected a span longer than zero/);
    expectOneSentence(result.output);
  });
});

describe('a port in use', () => {
  it.each([
    ['serve', 'PORT', { WEBHOOK_SECRET: 's' }],
    ['serve', 'METRICS_PORT', { WEBHOOK_SECRET: 's', PORT: '0' }],
    ['work', 'METRICS_PORT', { TRIAGE_RULES: RULES, TRIAGE_DRY_RUN: 'true' }],
  ])(
    '%s with its %s in use names the variable, in one sentence',
    async (command, variable, env) => {
      const taken = createServer().listen(0);
      await once(taken, 'listening');
      try {
        const { port } = taken.address() as AddressInfo;
        const result = await cli([command], {
          ...env,
          [variable]: String(port),
          REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
        });
        expect(result.code).toBe(1);
        expect(result.output).toContain(`${variable}: port ${port} is already in use`);
        expectOneSentence(result.output);
      } finally {
        taken.close();
      }
    },
  );
});

it('sandbox with its --port in use names the option, in one sentence', async () => {
  const taken = createServer().listen(0, '127.0.0.1');
  await once(taken, 'listening');
  try {
    const { port } = taken.address() as AddressInfo;
    const result = await cli(['sandbox', '--port', String(port)], {});
    expect(result.code).toBe(1);
    expect(result.output).toContain(
      `--port: port ${port} is already in use; stop what listens there, or give --port another one`,
    );
    expectOneSentence(result.output);
  } finally {
    taken.close();
  }
});

describe('sandbox with a --seed it cannot use', () => {
  // Node's "ENOENT: no such file or directory, open ..." and JSON.parse's "Expected property
  // name ... at position 1" named neither the option nor (for JSON) the file.
  it.each([
    ['a file that is not there', () => '/nonexistent/seed.json', 'cannot read it: no such file'],
    ['a directory', () => tmpdir(), 'cannot read it: it is a directory'],
    ['a file that is not JSON', () => writeSeed('{bad'), 'not JSON: Expected property name'],
  ])('%s: names the seed file, in one sentence', async (_, seedFile, problem) => {
    const file = seedFile();
    const result = await cli(['sandbox', '--port', '0', '--seed', file]);
    expect(result.code).toBe(1);
    expect(result.output).toContain(`feedback-receiver: seed ${file}: ${problem}`);
    expectOneSentence(result.output);
  });
});

function writeSeed(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'seed-')), 'seed.json');
  writeFileSync(file, text);
  onTestFinished(() => rmSync(dirname(file), { recursive: true, force: true }));
  return file;
}

describe('a numeric option that is not a whole number in range', () => {
  // Each command's options, with a value Number() alone took (the values themselves: the unit
  // test of parseWholeNumber): sandbox --rate-limit 1e20 started a sandbox that never limits,
  // sandbox --port= listened on a random port.
  it.each([
    [['deliveries', 'failed'], 'limit', '1e20', '1 to 9007199254740991'],
    [['quarantine', 'list'], 'limit', '0x10', '1 to 9007199254740991'],
    [['groups'], 'limit', '1e3', '1 to 9007199254740991'],
    [['sandbox'], 'rate-limit', '1e20', '1 to 9007199254740991'],
    [['sandbox'], 'port', '', '0 to 65535'],
  ])(
    '%j --%s=%j is a usage error, before anything starts',
    async (command, option, value, range) => {
      const result = await cli([...command, `--${option}=${value}`], {
        REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      });
      expect(result.code).toBe(2);
      expect(result.output).toBe(
        `feedback-receiver: --${option} takes a whole number from ${range}\n`,
      );
    },
  );
});

describe('an option given twice', () => {
  it.each([
    ['groups', ['--project', 'prj_a', '--project=prj_b'], '--project'],
    ['deliveries failed', ['--limit', '5', '--limit', '50'], '--limit'],
    ['deliveries run-again', ['--handler', 'x', '--since', '24h', '--since', '1h'], '--since'],
  ])(
    '%s %j is a usage error naming it, before Redis is asked',
    async (command, options, option) => {
      const result = await cli([...command.split(' '), ...options], {
        REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      });
      expect(result.code).toBe(2);
      expect(result.output).toBe(
        `feedback-receiver: ${option} is given more than once; give it once; see feedback-receiver ${command} --help\n`,
      );
    },
  );
});

describe('one port for two listeners', () => {
  it.each([
    ['serve', { WEBHOOK_SECRET: 's' }],
    ['start', { WEBHOOK_SECRET: 's', TRIAGE_RULES: RULES, TRIAGE_DRY_RUN: 'true' }],
  ])('%s with PORT and METRICS_PORT alike names them, in one sentence', async (command, env) => {
    const port = String(await freePort());
    const result = await cli([command], {
      ...env,
      PORT: port,
      METRICS_PORT: port,
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain(`METRICS_PORT: port ${port} is PORT's too`);
    expectOneSentence(result.output);
  });

  it("start with PORT at the worker's default METRICS_PORT (9464) says so", async () => {
    const result = await cli(['start'], {
      WEBHOOK_SECRET: 's',
      TRIAGE_RULES: RULES,
      TRIAGE_DRY_RUN: 'true',
      PORT: '9464',
      METRICS_PORT: '', // unset: the worker's default
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain("METRICS_PORT: port 9464 is PORT's too");
    expectOneSentence(result.output);
  });
});

describe('a Redis where nothing listens', () => {
  it.each([[['quarantine', 'list']], [['deliveries', 'failed']]])(
    '%j says so in one sentence, not after the whole start timeout',
    async (args) => {
      const url = `redis://127.0.0.1:${await freePort()}`;
      const result = await cli(args, { REDIS_URL: url, WEBHOOK_SECRET: 's', PORT: '0' });
      expect(result.code).toBe(1);
      expect(result.output).toContain(
        `REDIS_URL: cannot use Redis at ${url}: nothing listens there (connection refused)`,
      );
      expectOneSentence(result.output);
    },
  );
});

describe('an empty quarantine', () => {
  it('replay --all says the quarantine is empty, rather than nothing', async () => {
    const result = await cli(['quarantine', 'replay', '--all'], {
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: `e2e-cli-empty-${randomUUID().slice(0, 8)}`,
    });
    expect(result.code).toBe(0);
    expect(result.output).toBe('The quarantine is empty: nothing to replay.\n');
  });
});

describe('quarantine', () => {
  const prefix = `e2e-cli-messages-${randomUUID().slice(0, 8)}`;
  const env = () => ({ REDIS_URL: inject('redisUrl'), QUEUE_PREFIX: prefix });
  let id: string;

  beforeAll(async () => {
    const connection = new Redis(inject('redisUrl'));
    try {
      ({ id } = await createQuarantine({ connection, prefix }).add({
        receivedAt: new Date().toISOString(),
        reason: 'unparseable',
        issues: [{ path: '', message: 'Unexpected token \x1b[31m\nin red' }],
        headers: { 'user-agent': 'agent\u009b2J' },
        body: Buffer.from('\x1b]0;retitled\x07not json\r\nat all\u202e'),
      }));
    } finally {
      connection.disconnect();
    }
  });

  afterAll(async () => {
    const connection = new Redis(inject('redisUrl'));
    try {
      const keys = await connection.keys(`${prefix}:*`);
      if (keys.length > 0) await connection.del(...keys);
    } finally {
      connection.disconnect();
    }
  });

  /** Nothing the terminal would act on: no control character but the newline. */
  const expectNoControls = (text: string) =>
    expect(
      [...text].filter(
        (character) => character !== '\n' && /[\p{Cc}\u202a-\u202e]/u.test(character),
      ),
    ).toEqual([]);

  it('lists each entry on one line, with what the sender sent shown as escapes', async () => {
    const result = await cli(['quarantine', 'list'], env());
    expect(result.code).toBe(0);
    expectNoControls(result.stdout);
    const lines = result.stdout.split('\n').filter((line) => line.startsWith('q-'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('unparseable: Unexpected token \\x1b[31m\\nin red');
  });

  it('shows an entry with the escapes visible and the body on its own lines', async () => {
    const result = await cli(['quarantine', 'show', id], env());
    expect(result.code).toBe(0);
    expectNoControls(result.stdout);
    expect(result.stdout).toContain('"user-agent": "agent\\x9b2J"');
    expect(result.stdout).toContain('\\x1b]0;retitled\\x07not json\\r\nat all\\u202e');
  });

  it('replays an entry and shows why it is still invalid, escaped', async () => {
    const result = await cli(['quarantine', 'replay', id], env());
    expect(result.code).toBe(1);
    expectNoControls(result.stdout);
    expect(result.stdout).toContain('still invalid');
    expect(result.stdout).toContain('"\\x1b]0;retitl"');
  });

  it('ends quietly, with exit code 0, when the reader stops reading (| head -1)', async () => {
    const run = runCli(['quarantine', 'list'], env());
    // Closed before the command writes its first line: every write it makes meets EPIPE.
    run.child.stdout!.destroy();
    expect(await run.exited()).toBe(0);
    expect(run.output()).toBe('');
  });
});

describe('help', () => {
  // Both print the command's one help text; a command, a two-word command and a group stand for
  // the rest (each process loads the whole CLI: about a second of CPU).
  it.each([['serve'], ['hooks register'], ['deliveries run-again'], ['deliveries']])(
    'help %s prints what --help after the command prints',
    async (name) => {
      const [viaHelp, viaOption] = await Promise.all([
        cli(['help', ...name.split(' ')]),
        cli([...name.split(' '), '--help']),
      ]);
      expect(viaHelp).toMatchObject({ code: 0 });
      expect(viaOption).toMatchObject({ code: 0 });
      expect(viaHelp.stdout).toBe(viaOption.stdout);
      expect(viaHelp.stdout).toMatch(new RegExp(`^Usage: feedback-receiver ${name}[ \\n]`));
    },
  );

  it.each([[['nosuch']], [['hooks', 'nosuch']], [['serve', 'extra']]])(
    'help %j is a usage error naming the command',
    async (words) => {
      const result = await cli(['help', ...words]);
      expect(result.code).toBe(2);
      expect(result.output).toBe(
        `feedback-receiver: unknown command "${words.join(' ')}"; see feedback-receiver --help\n`,
      );
    },
  );
});

it.each([
  ['-x', '-x'],
  ['--nosuch', '--nosuch'],
  ['--token=hunter2', '--token'],
])('%s before any command is an unknown option, not an unknown command', async (arg, option) => {
  const result = await cli([arg]);
  expect(result.code).toBe(2);
  expect(result.output).toBe(
    `feedback-receiver: unknown option "${option}"; see feedback-receiver --help\n`,
  );
});

describe('a --url of the wrong kind', () => {
  it.each([
    [['send', '--url', 'ftp://x'], { WEBHOOK_SECRET: 's' }, '--url must be http or https'],
    [
      ['send', '--url', 'file:///etc/passwd'],
      { WEBHOOK_SECRET: 's' },
      '--url must be http or https',
    ],
    // Before the missing FEEDBACK_API_URL and token are looked at.
    [['hooks', 'register', '--project', 'p', '--url', 'ftp://x'], {}, '--url must be https'],
    [['hooks', 'register', '--project', 'p', '--url', 'x'], {}, '--url x is not a URL'],
  ])('%j is a usage error, in one sentence', async (args, env, message) => {
    const result = await cli(args, env);
    expect(result.code).toBe(2);
    expect(result.output).toContain(`feedback-receiver: ${message}`);
    expectOneSentence(result.output);
  });
});

describe('a host this machine does not have', () => {
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): never this machine's, and no name to look up.
  it.each([
    [['serve'], { HOST: '192.0.2.1', WEBHOOK_SECRET: 's', PORT: '0' }, 'HOST'],
    [['sandbox', '--host', '192.0.2.1', '--port', '0'], {}, '--host'],
  ])('%j names the setting, in one sentence', async (args, env, setting) => {
    const result = await cli(args, { ...env, REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    expect(result.code).toBe(1);
    expect(result.output).toBe(
      `feedback-receiver: ${setting}: cannot listen on 192.0.2.1: it is not an address of this machine\n`,
    );
  });
});

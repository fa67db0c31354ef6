/**
 * Scenario 8: hostile and broken requests, each sent several times to a running receiver of each
 * signature scheme. Each gets its documented status and a short JSON answer without a stack
 * trace; none crashes a process, queues a delivery, or leaves memory growing. Signed bodies that
 * are not feedback records go to the quarantine, as documented.
 */
import { afterAll, expect, it } from 'vitest';
import { signHmacSha256 } from '../../src/webhooks/hmac-sha256.js';
import { signStandardWebhook } from '../../src/webhooks/standard-webhooks.js';
import { SECRET, startCluster, type Cluster, type Receiver } from './harness/cluster.js';
import { reportedUrl } from '../helpers/cli-process.js';
import { finishScenario } from './harness/report-row.js';
import { sendRaw, type RawRequest } from '../helpers/raw-request.js';

const ROUNDS = 4;
/** How many requests apart each receiver's memory is sampled. */
const SAMPLE_EVERY = 10;
const WHSEC = `whsec_${Buffer.from('reliability-standard-webhooks-key').toString('base64')}`;
const OTHER_WHSEC = `whsec_${Buffer.from('some-other-standard-webhooks-key').toString('base64')}`;
const MiB = 1024 * 1024;

interface Case {
  readonly name: string;
  readonly scheme?: 'standard-webhooks';
  readonly request: () => RawRequest;
  readonly status: number;
}

const json = { 'content-type': 'application/json' };
const B = '{"id":"fb_hostile","title":"Never queued"}';
const signed = (body: string | Buffer, headers: Record<string, string> = json): RawRequest => ({
  headers: { ...headers, 'x-ybug-signature': signHmacSha256(body, SECRET) },
  body: [body],
});
const withSignature = (signature: string | string[], body = B): RawRequest => ({
  headers: { ...json, 'x-ybug-signature': signature },
  body: [body],
});
const standard = (
  { id = 'msg_hostile', timestamp = nowSeconds(), secret = WHSEC, body = B } = {},
  override: Record<string, string | undefined> = {},
): RawRequest => {
  const headers: Record<string, string> = {
    ...json,
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signStandardWebhook({ id, timestamp: String(timestamp), body }, secret),
  };
  for (const [name, value] of Object.entries(override)) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
  return { headers, body: [body] };
};
const nowSeconds = () => Math.floor(Date.now() / 1000);
const deep = (levels: number) => `{"id":"fb_deep","x":${'['.repeat(levels)}${']'.repeat(levels)}}`;
const hugeArray = `{"id":"fb_array","tags":[${Array.from({ length: 100_000 }, (_, n) => n).join(',')}]}`;
const invalidUtf8 = Buffer.concat([
  Buffer.from('{"id":"fb_'),
  Buffer.from([0xc3, 0x28, 0xff]),
  Buffer.from('"}'),
]);
const tenMiB = Array.from({ length: 160 }, () => Buffer.alloc(64 * 1024, 0x20));

const CASES: Case[] = [
  { name: 'no signature header', request: () => ({ headers: json, body: [B] }), status: 400 },
  { name: 'empty signature header', request: () => withSignature(''), status: 400 },
  { name: 'garbled signature', request: () => withSignature('zzzz'), status: 401 },
  {
    name: 'sha256= with non-hex',
    request: () => withSignature(`sha256=${'g'.repeat(64)}`),
    status: 401,
  },
  {
    name: 'sha256= with 63 hex digits',
    request: () => withSignature(`sha256=${'a'.repeat(63)}`),
    status: 401,
  },
  {
    name: 'sha256= with 65 hex digits',
    request: () => withSignature(`sha256=${'a'.repeat(65)}`),
    status: 401,
  },
  {
    name: 'another algorithm',
    request: () => withSignature(`sha1=${'a'.repeat(40)}`),
    status: 401,
  },
  {
    name: 'the right signature twice',
    request: () => withSignature([signHmacSha256(B, SECRET), signHmacSha256(B, SECRET)]),
    status: 400, // a repeated signature header is refused by name
  },
  {
    name: 'a right and a wrong signature',
    request: () => withSignature([signHmacSha256(B, SECRET), `sha256=${'0'.repeat(64)}`]),
    status: 400, // a repeated signature header is refused by name
  },
  {
    name: 'a wrong secret',
    request: () => withSignature(signHmacSha256(B, 'not-the-secret')),
    status: 401,
  },
  {
    name: 'a signature over another body',
    request: () => withSignature(signHmacSha256('{"id":"fb_other"}', SECRET)),
    status: 401,
  },
  {
    name: 'a signature over the body plus a newline',
    request: () => withSignature(signHmacSha256(`${B}\n`, SECRET)),
    status: 401,
  },
  {
    name: 'a huge signature header',
    request: () => withSignature(`sha256=${'a'.repeat(8_000)}`),
    status: 401,
  },
  { name: 'empty body, no signature', request: () => ({ headers: json, body: [] }), status: 400 },
  { name: 'empty body, signed', request: () => signed(''), status: 202 },
  { name: 'whitespace body, signed', request: () => signed('   \n'), status: 202 },
  { name: 'garbled JSON, signed', request: () => signed('{"id": '), status: 202 },
  { name: 'JSON null, signed', request: () => signed('null'), status: 202 },
  { name: 'a JSON array, signed', request: () => signed('[{"id":"fb_1"}]'), status: 202 },
  { name: 'invalid UTF-8, signed', request: () => signed(invalidUtf8), status: 202 },
  {
    name: 'invalid UTF-8, wrongly signed',
    request: () => withSignature(`sha256=${'b'.repeat(64)}`, invalidUtf8.toString('latin1')),
    status: 401,
  },
  { name: '100 000 levels of nesting, signed', request: () => signed(deep(100_000)), status: 202 },
  {
    name: '100 000 levels of nesting, unsigned',
    request: () => ({ headers: json, body: [deep(100_000)] }),
    status: 400,
  },
  {
    name: 'an array of 100 000 wrong items, signed',
    request: () => signed(hugeArray),
    status: 202,
  },
  {
    name: 'an array of 100 000 items, wrongly signed',
    request: () => withSignature(`sha256=${'c'.repeat(64)}`, hugeArray),
    status: 401,
  },
  {
    name: '__proto__ carrying an id, signed',
    request: () => signed('{"__proto__":{"id":"fb_polluted"},"title":"x"}'),
    status: 202,
  },
  {
    name: 'constructor.prototype carrying an id, signed',
    request: () => signed('{"constructor":{"prototype":{"id":"fb_polluted"}},"title":"x"}'),
    status: 202,
  },
  {
    name: 'prototype carrying an id, signed',
    request: () => signed('{"prototype":{"id":"fb_polluted"}}'),
    status: 202,
  },
  {
    name: '__proto__ inside an envelope, signed',
    request: () => signed('{"event":"feedback.created","data":{"__proto__":{"id":"fb_polluted"}}}'),
    status: 202,
  },
  {
    name: '10 MiB body with a length',
    request: () => ({
      headers: {
        ...json,
        'content-length': String(10 * MiB),
        'x-ybug-signature': `sha256=${'d'.repeat(64)}`,
      },
      body: tenMiB,
    }),
    status: 413,
  },
  {
    name: '10 MiB body, chunked',
    request: () => ({
      headers: { ...json, 'x-ybug-signature': `sha256=${'d'.repeat(64)}` },
      body: tenMiB,
    }),
    status: 413,
  },
  {
    name: 'a body sent byte by byte',
    request: () => ({
      headers: { ...json, 'x-ybug-signature': `sha256=${'e'.repeat(64)}` },
      body: [...B].flatMap((char) => [char, 15]),
    }),
    status: 401,
  },
  { name: 'text/plain', request: () => signed(B, { 'content-type': 'text/plain' }), status: 415 },
  { name: 'no content type', request: () => signed(B, {}), status: 415 },
  {
    name: 'a form',
    request: () => signed('id=fb_1', { 'content-type': 'application/x-www-form-urlencoded' }),
    status: 415,
  },
  {
    name: 'multipart',
    request: () => signed(B, { 'content-type': 'multipart/form-data; boundary=x' }),
    status: 415,
  },
  {
    name: 'application/xml',
    request: () => signed('<id>fb_1</id>', { 'content-type': 'application/xml' }),
    status: 415,
  },
  {
    name: 'gzip content encoding',
    request: () => signed(B, { ...json, 'content-encoding': 'gzip' }),
    status: 415,
  },
  {
    name: 'JSON with a charset, wrongly signed',
    request: () => ({
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-ybug-signature': `sha256=${'f'.repeat(64)}`,
      },
      body: [B],
    }),
    status: 401,
  },
  { name: 'GET on the webhook path', request: () => ({ method: 'GET' }), status: 405 },
  {
    name: 'PUT on the webhook path',
    request: () => ({ ...signed(B), method: 'PUT' }),
    status: 405,
  },
  { name: 'DELETE on the webhook path', request: () => ({ method: 'DELETE' }), status: 405 },
  {
    name: 'PATCH on the webhook path',
    request: () => ({ ...signed(B), method: 'PATCH' }),
    status: 405,
  },
  { name: 'OPTIONS on the webhook path', request: () => ({ method: 'OPTIONS' }), status: 405 },
  {
    name: 'a path below the webhook',
    request: () => ({ ...signed(B), path: '/webhooks/feedback/extra' }),
    status: 404,
  },
  {
    name: 'a path above the webhook',
    request: () => ({ ...signed(B), path: '/webhooks' }),
    status: 404,
  },
  {
    name: 'the dashboard without ADMIN_TOKEN',
    request: () => ({ method: 'GET', path: '/admin/queues' }),
    status: 404,
  },
  {
    name: 'the metrics on the webhook port',
    request: () => ({ method: 'GET', path: '/metrics' }),
    status: 404,
  },
  {
    name: 'path traversal',
    request: () => ({ method: 'GET', path: '/%2e%2e/%2e%2e/etc/passwd' }),
    status: 404,
  },
  {
    name: 'an 8000-character path',
    request: () => ({ method: 'GET', path: `/${'a'.repeat(8_000)}` }),
    status: 404,
  },
  {
    name: 'a 20 KB header',
    request: () => ({ headers: { ...json, 'x-padding': 'p'.repeat(20_000) }, body: [B] }),
    status: 431,
  },
  {
    name: 'a query string and no signature',
    request: () => ({ headers: json, body: [B], path: '/webhooks/feedback?debug=1' }),
    status: 400,
  },
  {
    name: 'Standard Webhooks: no webhook-id',
    scheme: 'standard-webhooks',
    request: () => standard({}, { 'webhook-id': undefined }),
    status: 400,
  },
  {
    name: 'Standard Webhooks: no timestamp',
    scheme: 'standard-webhooks',
    request: () => standard({}, { 'webhook-timestamp': undefined }),
    status: 400,
  },
  {
    name: 'Standard Webhooks: no signature',
    scheme: 'standard-webhooks',
    request: () => standard({}, { 'webhook-signature': undefined }),
    status: 400,
  },
  {
    name: 'Standard Webhooks: stale timestamp, rightly signed',
    scheme: 'standard-webhooks',
    request: () => standard({ timestamp: nowSeconds() - 600 }),
    status: 401,
  },
  {
    name: 'Standard Webhooks: future timestamp, rightly signed',
    scheme: 'standard-webhooks',
    request: () => standard({ timestamp: nowSeconds() + 600 }),
    status: 401,
  },
  {
    name: 'Standard Webhooks: timestamp not a number',
    scheme: 'standard-webhooks',
    request: () => standard({}, { 'webhook-timestamp': 'yesterday' }),
    status: 401,
  },
  {
    name: 'Standard Webhooks: a 16-digit timestamp',
    scheme: 'standard-webhooks',
    request: () => standard({}, { 'webhook-timestamp': '9999999999999999' }),
    status: 401,
  },
  {
    name: 'Standard Webhooks: signature version v2',
    scheme: 'standard-webhooks',
    request: () =>
      standard({}, { 'webhook-signature': `v2,${Buffer.alloc(32).toString('base64')}` }),
    status: 401,
  },
  {
    name: 'Standard Webhooks: garbled base64',
    scheme: 'standard-webhooks',
    request: () => standard({}, { 'webhook-signature': 'v1,@@@not-base64@@@' }),
    status: 401,
  },
  {
    name: 'Standard Webhooks: another secret',
    scheme: 'standard-webhooks',
    request: () => standard({ secret: OTHER_WHSEC }),
    status: 401,
  },
];

let cluster: Cluster;
afterAll(() => cluster?.close());

it(`answers ${CASES.length} kinds of hostile request as documented, ${ROUNDS} times, without harm`, async () => {
  cluster = await startCluster();
  // Each receiver opens its inspector, for the test to collect its garbage before a sample.
  const inspected = { NODE_OPTIONS: '--inspect=127.0.0.1:0' };
  const receivers: Record<'hmac' | 'standard-webhooks', Receiver> = {
    hmac: await cluster.serve(inspected),
    'standard-webhooks': await cluster.serve({
      ...inspected,
      SIGNATURE_SCHEME: 'standard-webhooks',
      WEBHOOK_SECRET: WHSEC,
    }),
  };
  // What each receiver's JavaScript holds (V8's heap and the buffers outside it) after a full
  // garbage collection, from its own metrics, in MiB. Not RSS: the allocator keeps freed pages of
  // large bodies for reuse, so RSS can stay tens of MiB up after a round without anything held;
  // and not without the collection: garbage of the 10 MiB bodies, not yet collected, once left a
  // sample 75 MiB up.
  const memory = () =>
    Promise.all(
      Object.values(receivers).map(async (r) => {
        await collectGarbage(r);
        // On METRICS_PORT (the test processes set it), not on the webhook port.
        const probes = await reportedUrl(
          r.cli,
          'receiver probes listening (/healthz, /readyz, /metrics)',
        );
        const metrics = await (await fetch(`${probes}/metrics`)).text();
        const gauge = (name: string) =>
          Number(new RegExp(`^feedback_receiver_${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
        const bytes = gauge('nodejs_heap_size_used_bytes') + gauge('nodejs_external_memory_bytes');
        expect(bytes, 'heap and external memory from /metrics').toBeGreaterThan(0);
        return bytes / MiB;
      }),
    );

  const answers: string[] = [];
  let sent = 0;
  let quarantinedAnswers = 0;
  /** A body sent again is the same entry: each round sends the same bodies. */
  const quarantineIds = new Set<string>();
  /** Each round's memory samples, taken every SAMPLE_EVERY cases and at its end. */
  const samples: number[][][] = [];
  for (let round = 1; round <= ROUNDS; round += 1) {
    const thisRound: number[][] = [];
    samples.push(thisRound);
    for (const [number, hostile] of CASES.entries()) {
      if (number % SAMPLE_EVERY === 0) thisRound.push(await memory());
      const receiver = receivers[hostile.scheme ?? 'hmac'];
      const answer = await sendRaw(receiver.base, hostile.request());
      sent += 1;
      answers.push(answer.text);
      expect({ case: hostile.name, status: answer.status }).toEqual({
        case: hostile.name,
        status: hostile.status,
      });
      expect(answer.text).not.toMatch(/\n\s+at |Error:/); // no stack trace, no raw error
      if (answer.status === 202) {
        expect(answer.text).toContain('"status":"quarantined"');
        quarantinedAnswers += 1;
        quarantineIds.add(/"id":"(q-[0-9a-f]+)"/.exec(answer.text)?.[1] ?? 'no id');
      }
      if (answer.status >= 400) {
        // A short problem+json body (the 431 too, which Node's parser refuses before the app).
        expect(answer.text).toMatch(/"code":"[A-Z_]+"/);
        expect(answer.text.length).toBeLessThan(2_000);
      }
    }
    thisRound.push(await memory());
  }

  // Both processes live and serve; nothing reached the deliveries queue.
  for (const receiver of Object.values(receivers)) {
    expect(receiver.cli.child.exitCode).toBeNull();
    expect((await fetch(`${receiver.base}/healthz`)).status).toBe(200);
  }
  const queued = await cluster.deliveries.getJobCounts();
  expect(Object.values(queued).reduce((sum, n) => sum + n, 0)).toBe(0);
  const quarantined = await cluster.quarantine.count();
  expect(quarantined).toBe(quarantineIds.size);
  expect(quarantineIds.size * ROUNDS).toBe(quarantinedAnswers);
  // Memory settles instead of growing with every round. Garbage not yet collected can leave a
  // sample tens of MiB high, so the lowest sample of the last two rounds is compared with the
  // lowest of the first two: a leak raises every later one.
  const lowest = (rounds: number[][][], index: number) =>
    Math.min(...rounds.flat().map((sample) => sample[index]!));
  const growth = Object.keys(receivers).map(
    (_, index) => lowest(samples.slice(-2), index) - lowest(samples.slice(0, 2), index),
  );
  expect(Math.max(...growth)).toBeLessThan(16);

  finishScenario({
    scenario: '8. hostile requests',
    result: {
      sent,
      acknowledged: quarantinedAnswers,
      handled: 0,
      deadLetter: 0,
      quarantined,
      lost: 0,
      handledTwice: 0,
    },
    notes: `${CASES.length} kinds x ${ROUNDS} rounds, each its documented status; 0 queued; ${quarantineIds.size} signed non-records, one quarantine entry each however often sent; heap + external memory growth from rounds 1-2 to rounds 3-4 (lowest of each): ${growth.map((mib) => `${mib.toFixed(1)} MiB`).join(', ')}`,
    output: cluster.output(),
    answers,
    secrets: [SECRET, WHSEC],
  });
});

/**
 * A full garbage collection in the receiver, asked through its inspector (Chrome DevTools
 * Protocol's HeapProfiler.collectGarbage), whose address it printed at start.
 */
async function collectGarbage(receiver: Receiver): Promise<void> {
  const address = /Debugger listening on (ws:\/\/\S+)/.exec(receiver.cli.output())?.[1];
  expect(address, "the receiver's inspector address").toBeDefined();
  const socket = new WebSocket(address!);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer from the inspector')), 10_000);
      socket.addEventListener('open', () =>
        socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' })),
      );
      socket.addEventListener('message', (event: MessageEvent) => {
        if ((JSON.parse(String(event.data)) as { id?: number }).id !== 1) return;
        clearTimeout(timer);
        resolve();
      });
      socket.addEventListener('error', () => {
        clearTimeout(timer);
        reject(new Error(`could not reach the inspector at ${address}`));
      });
    });
  } finally {
    socket.close();
  }
}

/**
 * Traces, with real processes on Node 24: a receiver and a worker send OTLP/HTTP to a collector
 * stand-in (test/helpers/otlp-collector.ts, which decodes JSON and protobuf itself). One delivery
 * sent with a `traceparent` makes one trace, from the sender's request to the feedback API's
 * answer; with no endpoint set, nothing of OpenTelemetry is loaded. On Node 20 an endpoint stops
 * the start, with a sentence that names the Node it needs.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { SANDBOX_TOKEN } from '../../src/sandbox/seed.js';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/server.js';
import { reportedUrl, runCli, workerStarted, type CliProcess } from '../helpers/cli-process.js';
import { findNode24 } from '../helpers/node-versions.js';
import {
  describe as describeSpans,
  SPAN_KIND,
  startOtlpCollector,
  type OtlpCollector,
  type ReceivedSpan,
} from '../helpers/otlp-collector.js';
import { createRecord } from '../helpers/sandbox-client.js';
import { postDelivery } from '../helpers/signed-request.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RECORD_MODULES = join(ROOT, 'test/fixtures/record-loaded-modules.mjs');
const SECRET = 'e2e-tracing-secret';
const ADMIN_TOKEN = 'e2e-tracing-admin-token';
const node24 = findNode24();
const tracingNode = Number(process.versions.node.split('.')[0]) >= 23 ? process.execPath : node24;

const cleanup: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function start(
  command: 'serve' | 'work',
  env: Record<string, string>,
  node = tracingNode!,
  modulesLog?: string,
): CliProcess {
  const cli = runCli([command], modulesLog ? { ...env, LOADED_MODULES_LOG: modulesLog } : env, {
    node,
    nodeArgs: modulesLog ? ['--import', RECORD_MODULES] : [],
  });
  cleanup.push(async () => {
    if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    await cli.exited();
  });
  return cli;
}

async function collector(): Promise<OtlpCollector> {
  const started = await startOtlpCollector();
  cleanup.push(() => started.close());
  return started;
}

async function sandbox(): Promise<RunningSandbox> {
  const started = await startSandbox({ port: 0, logger: createLogger({ level: 'silent' }) });
  cleanup.push(() => started.close());
  return started;
}

/** The two processes' shared settings: one Redis, a prefix of the test's own. */
function sharedEnv(): Record<string, string> {
  return { REDIS_URL: inject('redisUrl'), QUEUE_PREFIX: `e2e-trace-${randomUUID().slice(0, 8)}` };
}

function tracingEnv(endpoint: string, protocol: string): Record<string, string> {
  // Export every 100 ms, so the test waits little for the batch.
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
}

async function serve(env: Record<string, string>, modulesLog?: string): Promise<string> {
  const cli = start(
    'serve',
    { PORT: '0', HOST: '127.0.0.1', WEBHOOK_SECRET: SECRET, ...env },
    tracingNode,
    modulesLog,
  );
  const url = await reportedUrl(cli, 'receiver listening');
  receiverOutput = cli.output;
  return url;
}
let receiverOutput: () => string = () => '';

function post(receiver: string, record: object, headers: Record<string, string> = {}) {
  return postDelivery(receiver, record, SECRET, headers);
}

/** A W3C traceparent, as a sender that traces would send it. */
function traceparent(): { header: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

function one(spans: readonly ReceivedSpan[], test: (span: ReceivedSpan) => boolean, what: string) {
  const found = spans.filter(test);
  expect(found, `${what} in ${describeSpans(spans)}`).toHaveLength(1);
  return found[0]!;
}

const hasTracingNode = tracingNode !== undefined;

describe.runIf(hasTracingNode)('with an OTLP endpoint', () => {
  it('makes one trace of a delivery, from the sender through the worker to the PATCH (protobuf)', async () => {
    const otlp = await collector();
    const api = await sandbox();
    const record = await createRecord(api.url, 'prj_app', { title: 'The app crashed at login' });
    const shared = sharedEnv();
    const tracing = tracingEnv(otlp.url, 'http/protobuf');
    const dir = await mkdtemp(join(tmpdir(), 'tracing-'));
    const modulesLog = join(dir, 'modules.log');
    const receiver = await serve(
      {
        ...shared,
        ...tracing,
        ADMIN_TOKEN,
        TRACE_URL_TEMPLATE: 'http://jaeger.example:16686/trace/{traceId}',
      },
      modulesLog,
    );
    const worker = await workerStarted(
      start('work', {
        ...shared,
        ...tracing,
        TRIAGE_RULES: join(ROOT, 'examples/triage-rules.jsonc'),
        FEEDBACK_API_URL: api.url,
        FEEDBACK_API_TOKEN: SANDBOX_TOKEN,
        // One PATCH a minute: a second delivery waits for the limit (an event on its attempt).
        FEEDBACK_API_RATE_LIMIT: '1',
      }),
    );

    const sender = traceparent();
    const answer = await post(receiver, record, { traceparent: sender.header });
    expect(answer.status).toBe(202);
    const { id: key } = (await answer.json()) as { id: string };

    const isPatch = (span: ReceivedSpan) =>
      span.traceId === sender.traceId && span.name === 'PATCH /v1/feedback/{id}';
    // The two processes export in batches on their own schedules, and a span is exported when it
    // ends: the run's consumer span ends after the PATCH inside it. Wait for every span read below.
    const isServer = (span: ReceivedSpan) =>
      span.traceId === sender.traceId && span.kind === SPAN_KIND.server;
    const isConsumer = (name: string) => (span: ReceivedSpan) =>
      span.traceId === sender.traceId && span.kind === SPAN_KIND.consumer && span.name === name;
    const all = await otlp.waitFor(
      (spans) =>
        spans.some(isPatch) &&
        spans.some(isServer) &&
        spans.some(isConsumer('process deliveries')) &&
        spans.some(isConsumer('process runs-auto-triage')),
    );
    const trace = all.filter((span) => span.traceId === sender.traceId);

    const server = one(trace, (span) => span.kind === SPAN_KIND.server, 'the HTTP server span');
    expect(server).toMatchObject({
      name: 'POST /webhooks/feedback',
      parentSpanId: sender.spanId,
      service: 'feedback-receiver',
      attributes: expect.objectContaining({
        'http.request.method': 'POST',
        'url.path': '/webhooks/feedback',
        'http.route': '/webhooks/feedback',
        'http.response.status_code': 202,
        'feedback.delivery.outcome': 'queued',
        'feedback.delivery.key': key,
      }),
    });
    expect(server.events.map((event) => event.name)).toEqual([
      'signature verified',
      'payload read',
    ]);
    const enqueue = one(
      trace,
      (span) => span.kind === SPAN_KIND.producer && span.name.startsWith('add deliveries'),
      'the enqueue',
    );
    expect(enqueue.parentSpanId).toBe(server.spanId);
    const routing = one(
      trace,
      (span) => span.kind === SPAN_KIND.consumer && span.name === 'process deliveries',
      'routing',
    );
    expect(routing).toMatchObject({
      parentSpanId: enqueue.spanId,
      service: 'feedback-receiver-worker',
      attributes: expect.objectContaining({ 'feedback.handlers': 'auto-triage' }),
    });
    const runAdded = one(
      trace,
      (span) => span.kind === SPAN_KIND.producer && span.name.startsWith('add runs-auto-triage'),
      'the run added',
    );
    expect(runAdded.parentSpanId).toBe(routing.spanId);
    const runTaken = one(
      trace,
      (span) => span.kind === SPAN_KIND.consumer && span.name === 'process runs-auto-triage',
      'the run taken',
    );
    expect(runTaken.parentSpanId).toBe(runAdded.spanId);
    const attempt = one(trace, (span) => span.name === 'handler auto-triage', 'the attempt');
    expect(attempt).toMatchObject({
      parentSpanId: runTaken.spanId,
      attributes: expect.objectContaining({
        'feedback.handler': 'auto-triage',
        'feedback.run.attempt': 1,
        'feedback.run.outcome': 'completed',
        'feedback.delivery.key': key,
      }),
    });
    const patch = one(trace, isPatch, 'the PATCH');
    expect(patch).toMatchObject({
      kind: SPAN_KIND.client,
      parentSpanId: attempt.spanId,
      attributes: expect.objectContaining({
        'http.request.method': 'PATCH',
        'url.template': '/v1/feedback/{id}',
        'http.response.status_code': 200,
      }),
    });

    // Every log line written inside the request or the run carries the trace.
    const traced = (output: string, message: string) =>
      output
        .split('\n')
        .filter((line) => line.includes(`"msg":"${message}"`))
        .map((line) => JSON.parse(line) as { trace_id?: string; span_id?: string });
    expect(traced(receiverOutput(), 'delivery queued')).toEqual([
      expect.objectContaining({ trace_id: sender.traceId, span_id: server.spanId }),
    ]);
    expect(traced(worker.output(), 'api call')).toEqual([
      expect.objectContaining({ trace_id: sender.traceId, span_id: patch.spanId }),
    ]);

    // The console shows the trace id, as a link with TRACE_URL_TEMPLATE.
    const page = await fetch(`${receiver}/admin/deliveries/${encodeURIComponent(key)}`, {
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(await page.text()).toContain(
      `<a href="http://jaeger.example:16686/trace/${sender.traceId}" rel="noreferrer"><code>${sender.traceId}</code></a>`,
    );

    // Nothing secret in anything sent; protobuf all along; and the SDK was loaded.
    const sent = Buffer.concat(otlp.bodies).toString('latin1');
    for (const secret of [SECRET, SANDBOX_TOKEN, ADMIN_TOKEN, 'Bearer', 'sha256=']) {
      expect(sent, 'a secret in a span').not.toContain(secret);
    }
    // Nor the record: a job's result (auto-triage's is the record as the API answered) stays out.
    expect(sent, "the record's title in a span").not.toContain(record.title);
    expect(new Set(otlp.contentTypes)).toEqual(new Set(['application/x-protobuf']));
    expect(readFileSync(modulesLog, 'utf8')).toContain('@opentelemetry/sdk-node');

    // A second delivery within the minute: its attempt waits for the rate limit, no attempt spent.
    const second = await createRecord(api.url, 'prj_app', { title: 'It crashed again' });
    expect((await post(receiver, second)).status).toBe(202);
    const waited = (span: ReceivedSpan) =>
      span.name === 'handler auto-triage' &&
      span.events.some((event) => event.name === 'rate limit wait');
    const attempts = await otlp.waitFor((spans) => spans.some(waited));
    const delayed = one(attempts, waited, 'the attempt that waited');
    expect(delayed.attributes['feedback.run.outcome']).toBe('delayed');
    expect(
      delayed.events.find((event) => event.name === 'rate limit wait')?.attributes[
        'feedback.wait_ms'
      ],
    ).toBeGreaterThan(1_000);
  });

  it('continues a sender’s trace only once its signature verified', async () => {
    const otlp = await collector();
    const receiver = await serve({ ...sharedEnv(), ...tracingEnv(otlp.url, 'http/json') });

    const forged = traceparent();
    const refused = await postDelivery(receiver, { id: 'fb_forged' }, 'not-the-secret', {
      traceparent: forged.header,
    });
    expect(refused.status).toBe(401);
    const signed = traceparent();
    const accepted = await post(receiver, { id: 'fb_signed' }, { traceparent: signed.header });
    expect(accepted.status).toBe(202);

    const answered = (spans: readonly ReceivedSpan[], status: number) =>
      spans.filter(
        (span) =>
          span.kind === SPAN_KIND.server && span.attributes['http.response.status_code'] === status,
      );
    const all = await otlp.waitFor(
      (spans) => answered(spans, 401).length === 1 && answered(spans, 202).length === 1,
    );
    const [unauthenticated] = answered(all, 401);
    // A trace of its own: the caller's ids are not taken before the signature is checked.
    expect(unauthenticated!.traceId).not.toBe(forged.traceId);
    expect(unauthenticated!.parentSpanId).toBe('');
    expect(unauthenticated!.attributes).toMatchObject({
      'feedback.delivery.outcome': 'rejected',
      'feedback.delivery.reason': 'signature_mismatch',
    });
    expect(answered(all, 202)[0]).toMatchObject({
      traceId: signed.traceId,
      parentSpanId: signed.spanId,
    });
  });

  it('shows each attempt of a run that fails twice, in the same trace (JSON)', async () => {
    const otlp = await collector();
    const shared = sharedEnv();
    const tracing = tracingEnv(otlp.url, 'http/json');
    const receiver = await serve({ ...shared, ...tracing });
    await workerStarted(
      start('work', {
        ...shared,
        ...tracing,
        HANDLERS: join(ROOT, 'test/fixtures/handlers/fails-twice.mjs'),
      }),
    );

    // A sender that says "not sampled" decides nothing here: the trace is recorded all the same.
    const unsampled = traceparent();
    const answer = await post(
      receiver,
      { id: 'fb_fails_twice', title: 'Three tries' },
      { traceparent: unsampled.header.replace(/-01$/, '-00') },
    );
    expect(answer.status).toBe(202);
    const attempts = (spans: readonly ReceivedSpan[]) =>
      spans.filter((span) => span.name === 'handler fails-twice');
    const all = await otlp.waitFor(
      (spans) =>
        attempts(spans).length === 3 && spans.some((span) => span.kind === SPAN_KIND.server),
    );

    const server = one(all, (span) => span.kind === SPAN_KIND.server, 'the HTTP server span');
    expect(server).toMatchObject({ traceId: unsampled.traceId, parentSpanId: unsampled.spanId });
    const seen = attempts(all).sort(
      (a, b) =>
        Number(a.attributes['feedback.run.attempt']) - Number(b.attributes['feedback.run.attempt']),
    );
    expect(seen.map((span) => span.traceId)).toEqual([
      server.traceId,
      server.traceId,
      server.traceId,
    ]);
    expect(
      seen.map((span) => [
        span.attributes['feedback.run.attempt'],
        span.attributes['feedback.run.outcome'],
        span.status.code,
      ]),
    ).toEqual([
      [1, 'retrying', 2],
      [2, 'retrying', 2],
      [3, 'completed', 0],
    ]);
    expect(seen[0]!.status.message).toBe('attempt 1 fails on purpose');

    // A run that uses up its attempts shows the dead letter; a quarantined delivery its reason.
    expect((await post(receiver, { id: 'fb_hopeless', title: 'hopeless' })).status).toBe(202);
    expect((await post(receiver, { id: 'fb_invalid', rating: 'five' })).status).toBe(202);
    const deadLetter = (span: ReceivedSpan) =>
      span.events.some((event) => event.name === 'moved to the dead letter');
    const quarantined = (span: ReceivedSpan) =>
      span.attributes['feedback.delivery.outcome'] === 'quarantined';
    const later = await otlp.waitFor((spans) => spans.some(deadLetter) && spans.some(quarantined));
    expect(one(later, deadLetter, 'the last attempt').attributes).toMatchObject({
      'feedback.run.attempt': 3,
      'feedback.run.outcome': 'failed',
    });
    expect(one(later, quarantined, 'the quarantined delivery').attributes).toMatchObject({
      'feedback.delivery.reason': 'schema',
      'feedback.quarantine.id': expect.any(String),
      'http.response.status_code': 202,
    });
    // What the handler returned (the record's title) is kept with its job, never exported.
    expect(Buffer.concat(otlp.bodies).toString('utf8')).not.toContain('Three tries');
    expect(new Set(otlp.contentTypes)).toEqual(new Set(['application/json']));
  });

  it('sends nothing and loads no OpenTelemetry module without an endpoint, or when disabled', async () => {
    const otlp = await collector();
    const dir = await mkdtemp(join(tmpdir(), 'tracing-off-'));
    const modulesLog = join(dir, 'modules.log');
    const shared = sharedEnv();
    // Everything but the endpoint: the service name alone turns nothing on.
    const receiver = await serve({ ...shared, OTEL_SERVICE_NAME: 'not-traced' }, modulesLog);
    // The worker knows the collector, and is told OTEL_SDK_DISABLED: off all the same.
    const workerModulesLog = join(dir, 'worker-modules.log');
    const worker = await workerStarted(
      start(
        'work',
        {
          ...shared,
          ...tracingEnv(otlp.url, 'http/json'),
          OTEL_SDK_DISABLED: 'true',
          HANDLERS: join(ROOT, 'test/fixtures/handlers/fails-twice.mjs'),
        },
        tracingNode,
        workerModulesLog,
      ),
    );
    const answer = await post(
      receiver,
      { id: 'fb_untraced', title: 'No tracing' },
      { traceparent: traceparent().header },
    );
    expect(answer.status).toBe(202);
    // The handler ran (its second attempt failing), through the worker's whole path.
    await vi.waitFor(() => expect(worker.output()).toContain('"attempt":2'), { timeout: 10_000 });
    expect(readFileSync(modulesLog, 'utf8')).toBe('');
    expect(readFileSync(workerModulesLog, 'utf8')).toBe('');
    expect(otlp.bodies).toEqual([]);
    expect(receiverOutput()).not.toContain('trace_id');
  });
});

describe.runIf(Number(process.versions.node.split('.')[0]) < 22)('on Node 20', () => {
  it('stops at start when an endpoint is set, naming the Node that tracing needs', async () => {
    const cli = start(
      'serve',
      {
        ...sharedEnv(),
        WEBHOOK_SECRET: SECRET,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      },
      process.execPath,
    );
    expect(await cli.exited()).not.toBe(0);
    expect(cli.output()).toContain('tracing needs Node 22.15.0 or later');
  });
});

/**
 * An open-loop load generator: sends deliveries at a fixed rate whatever the answers, as a
 * service delivering webhooks does (a closed loop would slow down with the server and hide its
 * queueing). Each record carries `sent_at`, the wall-clock millisecond its POST left, for the
 * handler to read. Reads its settings as JSON from argv[2]; prints one JSON line.
 */
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { signHmacSha256 } from '../src/webhooks/hmac-sha256.js';
import { feedbackRecord } from './payload.js';
import { percentile } from './stats.js';

export interface OpenLoopSettings {
  readonly url: string;
  readonly perSecond: number;
  readonly seconds: number;
  readonly secret: string;
  readonly runId: string;
}

export interface OpenLoopResult {
  readonly sent: number;
  readonly ok: number;
  readonly notOk: number;
  readonly errors: number;
  /** How long the answers took, from the request leaving to the answer's end. */
  readonly answerP50Ms: number;
  readonly answerP99Ms: number;
}

const settings = JSON.parse(process.argv[2] ?? '{}') as OpenLoopSettings;
const agent = new Agent({ keepAlive: true, maxSockets: 512 });
const total = Math.round(settings.perSecond * settings.seconds);
const counts = { ok: 0, notOk: 0, errors: 0 };
const answerMs: number[] = [];

function post(index: number): Promise<void> {
  const body = JSON.stringify({
    ...feedbackRecord(`fb_${settings.runId}_${index}`),
    sent_at: Date.now(),
  });
  const start = performance.now();
  return new Promise((resolve) => {
    const req = request(settings.url, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'x-ybug-signature': signHmacSha256(body, settings.secret),
      },
    });
    req.on('response', (response) => {
      counts[response.statusCode === 202 ? 'ok' : 'notOk'] += 1;
      response.resume().on('end', () => {
        answerMs.push(performance.now() - start);
        resolve();
      });
    });
    req.on('error', () => {
      counts.errors += 1;
      resolve();
    });
    req.end(body);
  });
}

const started = performance.now();
const inFlight: Promise<void>[] = [];
for (let index = 0; index < total;) {
  // Every request whose time has come goes now; then sleep until the next one is due.
  const due = Math.min(
    total,
    Math.floor(((performance.now() - started) / 1000) * settings.perSecond) + 1,
  );
  for (; index < due; index += 1) inFlight.push(post(index));
  await sleep(Math.max(0, (index / settings.perSecond) * 1000 - (performance.now() - started)));
}
await Promise.all(inFlight);
agent.destroy();
const result: OpenLoopResult = {
  sent: total,
  ...counts,
  answerP50Ms: Math.round(percentile(answerMs, 50) * 10) / 10,
  answerP99Ms: Math.round(percentile(answerMs, 99) * 10) / 10,
};
process.stdout.write(`${JSON.stringify(result)}\n`);

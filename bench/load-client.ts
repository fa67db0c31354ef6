/**
 * The load generator, run as its own process so its CPU is not the server's: autocannon posting
 * signed deliveries, each with a record id of its own, so that none is a duplicate. Reads its
 * settings as JSON from argv[2] and prints its result as one JSON line.
 */
import autocannon from 'autocannon';
import { signHmacSha256 } from '../src/webhooks/hmac-sha256.js';
import { deliveryBody } from './payload.js';

export interface LoadSettings {
  readonly url: string;
  readonly connections: number;
  readonly seconds: number;
  readonly secret: string;
  /** Makes this run's record ids unique across runs. */
  readonly runId: string;
}

export interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly ok: number;
  readonly notOk: number;
  readonly errors: number;
}

const settings = JSON.parse(process.argv[2] ?? '{}') as LoadSettings;
let sequence = 0;

const result = await autocannon({
  url: settings.url,
  connections: settings.connections,
  duration: settings.seconds,
  requests: [
    {
      method: 'POST',
      setupRequest: (request) => {
        const body = deliveryBody(`fb_${settings.runId}_${(sequence += 1)}`);
        return {
          ...request,
          body,
          headers: {
            'content-type': 'application/json',
            'x-ybug-signature': signHmacSha256(body, settings.secret),
          },
        };
      },
    },
  ],
});

const summary: LoadResult = {
  // Completed requests over the run's length: autocannon's per-second average.
  requestsPerSecond: result.requests.average,
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  ok: result['2xx'],
  notOk: result.non2xx,
  errors: result.errors + result.timeouts,
};
process.stdout.write(`${JSON.stringify(summary)}\n`);

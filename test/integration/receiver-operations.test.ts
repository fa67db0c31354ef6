import { once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { loadReceiverConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createReceiverDeps, startReceiver } from '../../src/receiver.js';
import { signHmacSha256 } from '../../src/webhooks/hmac-sha256.js';
import { postSigned } from '../helpers/signed-request.js';
import {
  createTestReceiver,
  TEST_METRICS_TOKEN,
  TEST_SECRET,
  type TestReceiver,
} from '../helpers/test-receiver.js';

let receiver: TestReceiver;
beforeEach(async () => {
  receiver = await createTestReceiver({ secrets: ['new-secret', TEST_SECRET] });
});
afterEach(async () => {
  await receiver.close();
});

describe('the receiver, operated', () => {
  it('counts deliveries by outcome and the secret that matched, and reports queue depth', async () => {
    await postSigned(receiver.app, { id: 'fb_1' }).expect(202);
    await postSigned(receiver.app, { id: 'fb_1' }).expect(200);
    await postSigned(receiver.app, { id: 'fb_2' }, { secret: 'new-secret' }).expect(202);
    await postSigned(receiver.app, { id: 'fb_3' }, { secret: 'wrong' }).expect(401);
    await postSigned(receiver.app, 'not json').expect(202);

    const response = await request(receiver.app)
      .get('/metrics')
      .auth(TEST_METRICS_TOKEN, { type: 'bearer' })
      .expect(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    const text = response.text;
    expect(text).toContain('feedback_receiver_deliveries_total{outcome="queued",reason=""} 2');
    expect(text).toContain('feedback_receiver_deliveries_total{outcome="duplicate",reason=""} 1');
    expect(text).toContain('feedback_receiver_deliveries_total{outcome="quarantined",reason=""} 1');
    expect(text).toContain(
      'feedback_receiver_deliveries_total{outcome="rejected",reason="signature_mismatch"} 1',
    );
    // Secrets numbered from 1, as the console and the logs number them: #1 is the first.
    expect(text).toContain('feedback_receiver_secret_matches_total{index="1"} 1');
    expect(text).toContain('feedback_receiver_secret_matches_total{index="2"} 3');
    expect(text).toContain('feedback_receiver_queue_jobs{queue="deliveries",state="waiting"} 2');
    expect(text).toContain('feedback_receiver_enqueue_duration_seconds_count 3');
    expect(text).toMatch(
      /feedback_receiver_http_request_duration_seconds_count\{method="POST",route="\/webhooks\/feedback",status="202"\} 3/,
    );
    expect(text).toContain('feedback_receiver_process_resident_memory_bytes');
  });

  it('labels unknown paths as "other", so a scan cannot multiply the series', async () => {
    await request(receiver.app).get('/wp-admin/setup.php').expect(404);
    const { text } = await request(receiver.app)
      .get('/metrics')
      .auth(TEST_METRICS_TOKEN, { type: 'bearer' });
    expect(text).toMatch(/route="other",status="404"/);
    expect(text).not.toContain('wp-admin');
  });

  it('sends security headers and no x-powered-by', async () => {
    const response = await request(receiver.app).get('/healthz').expect(200);
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['x-powered-by']).toBeUndefined();
  });
});

describe('draining', () => {
  it('answers 503 on /readyz once draining, while /healthz stays 200', async () => {
    const deps = createReceiverDeps(
      loadReceiverConfig({
        WEBHOOK_SECRET: 's',
        REDIS_URL: inject('redisUrl'),
        QUEUE_PREFIX: 'drain-test',
      }),
      createLogger({ level: 'silent' }),
    );
    try {
      const app = createApp(deps);
      await vi.waitFor(
        async () => expect((await request(app).get('/readyz')).status, 'ready').toBe(200),
        { timeout: 5_000 },
      );
      deps.drain();
      await request(app).get('/readyz').expect(503);
      await request(app).get('/healthz').expect(200);
    } finally {
      await deps.close();
    }
  });

  it('answers a request taken while shutting down with Connection: close, so its sender sends no more on that connection', async () => {
    const running = await startReceiver(
      {
        ...loadReceiverConfig({
          WEBHOOK_SECRET: TEST_SECRET,
          REDIS_URL: inject('redisUrl'),
          QUEUE_PREFIX: `drain-close-${Math.random().toString(36).slice(2, 8)}`,
          PORT: '0',
        }),
        host: '127.0.0.1',
      },
      createLogger({ level: 'silent' }),
    );
    const body = JSON.stringify({ id: 'fb_drain', title: 'sent as the receiver stops' });
    const socket = connect((running.server.address() as AddressInfo).port, '127.0.0.1');
    const answer = readAll(socket);
    try {
      socket.write(
        'POST /webhooks/feedback HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\n' +
          `X-Ybug-Signature: ${signHmacSha256(body, TEST_SECRET)}\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
      );
      await once(running.server, 'request');
      const closed = running.close();
      socket.write(body);
      const [head] = (await answer).split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 202 /);
      expect(head).toMatch(/^connection: close$/im);
      await closed;
    } finally {
      socket.destroy();
      await running.close();
    }
  });
});

/** Everything `socket` receives until the other end closes it. */
function readAll(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('request logs', () => {
  it('writes one line per request: the route its own, the rest a request line', async () => {
    await postSigned(receiver.app, { id: 'fb_log' }).expect(202);
    await request(receiver.app).get('/webhooks/feedback').expect(405);
    await request(receiver.app).get('/nowhere').expect(404);
    await request(receiver.app).get('/healthz').expect(200);
    const lines = receiver.logs.filter((line) => line.msg !== 'redis connection ready again');
    expect(lines.map((line) => [line.msg, line.status ?? line.outcome])).toEqual([
      ['delivery queued', 'queued'],
      ['request', 405],
      ['request', 404],
      ['request', 200],
    ]);
    expect(lines[3]?.level).toBe(20); // probes at debug
  });
});

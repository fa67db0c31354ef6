import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'bullmq';
import { Cluster } from 'ioredis';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DELIVERIES_QUEUE } from '../../src/queue/deliveries-queue.js';
import { signHmacSha256 } from '../../src/webhooks/hmac-sha256.js';
import { signStandardWebhook } from '../../src/webhooks/standard-webhooks.js';
import { sendRaw, type RawAnswer, type RawRequest } from '../helpers/raw-request.js';
import { postSigned } from '../helpers/signed-request.js';
import { createTestReceiver, TEST_SECRET, type TestReceiver } from '../helpers/test-receiver.js';

const record = JSON.parse(
  readFileSync(new URL('../fixtures/feedback-record.json', import.meta.url), 'utf8'),
) as { id: string };

const PROBLEM = /^application\/problem\+json/;

let receiver: TestReceiver;
afterEach(async () => {
  await receiver?.close();
});

/** One request written on a socket to the receiver, headers repeated as given. */
async function sendOnSocket(raw: RawRequest): Promise<RawAnswer> {
  const server = receiver.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    return await sendRaw(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, raw);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('POST /webhooks/feedback', () => {
  beforeEach(async () => {
    receiver = await createTestReceiver();
  });

  it('queues a signed delivery and answers 202 with its key', async () => {
    const response = await postSigned(receiver.app, record).expect(202);
    expect(response.body).toEqual({ status: 'queued', id: `feedback.created:${record.id}` });
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['x-content-type-options']).toBe('nosniff');

    const [job] = await receiver.deliveries.queue.getWaiting();
    expect((await receiver.deliveries.find(`feedback.created:${record.id}`))?.id).toBe(job?.id);
    expect(job?.name).toBe('feedback.created');
    expect(job?.data).toMatchObject({
      key: `feedback.created:${record.id}`,
      event: 'feedback.created',
      record,
    });
  });

  it('answers 200 duplicate for the same delivery and queues nothing more', async () => {
    await postSigned(receiver.app, record).expect(202);
    const again = await postSigned(receiver.app, record).expect(200);
    expect(again.body).toEqual({ status: 'duplicate', id: `feedback.created:${record.id}` });
    expect(await receiver.deliveries.queue.getJobCountByTypes('waiting')).toBe(1);
  });

  it('still knows a duplicate after retention removed the first job', async () => {
    await receiver.close();
    receiver = await createTestReceiver({ retention: { removeOnComplete: true } });
    const first = await postSigned(receiver.app, record).expect(202);
    const jobId = (await receiver.deliveries.find(first.body.id))!.id!;
    const worker = new Worker(DELIVERIES_QUEUE, async () => 'done', {
      connection: { ...connectionOf(receiver), maxRetriesPerRequest: null },
      prefix: receiver.prefix,
    });

    try {
      await vi.waitFor(
        async () =>
          expect(
            await receiver.deliveries.queue.getJob(jobId),
            'the completed job to be removed',
          ).toBeUndefined(),
        { timeout: 5_000 },
      );
    } finally {
      await worker.close();
    }
    const again = await postSigned(receiver.app, record).expect(200);
    expect(again.body.status).toBe('duplicate');
    expect(await receiver.deliveries.queue.getJobCounts('waiting', 'active', 'completed')).toEqual({
      waiting: 0,
      active: 0,
      completed: 0,
    });
  });

  it('answers 500 INTERNAL, without Retry-After, when storing fails for another reason', async () => {
    await receiver.close();
    receiver = await createTestReceiver({
      wrapQueue: () => ({
        enqueue: () => Promise.reject(new TypeError('a bug in the code that stores')),
      }),
    });
    const response = await postSigned(receiver.app, record).expect(500);
    expect(response.body).toMatchObject({ code: 'INTERNAL' });
    expect(response.headers['retry-after']).toBeUndefined();
    expect(JSON.stringify(response.body)).not.toContain('a bug in the code');
    const line = receiver.logs.find((log) => log.msg === 'delivery not stored: internal error');
    expect(line).toMatchObject({ level: 50, err: { type: 'TypeError' } });
    expect((line?.err as { stack: string }).stack).toMatch(/a bug in the code that stores\n\s+at /);
    const metrics = await receiver.metrics.registry.getSingleMetricAsString(
      'feedback_receiver_deliveries_total',
    );
    expect(metrics).toContain('outcome="rejected",reason="internal"} 1');
  });

  it('queues exactly one job for identical deliveries sent at the same moment', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => postSigned(receiver.app, record)),
    );
    const statuses = responses.map((response) => response.body.status).sort();
    expect(statuses).toEqual([...Array<string>(9).fill('duplicate'), 'queued']);
    expect(await receiver.deliveries.queue.getJobCountByTypes('waiting')).toBe(1);
  });

  it('answers 202 ignored for another event and queues nothing', async () => {
    const response = await postSigned(receiver.app, { event: 'feedback.updated', data: record });
    expect(response.status).toBe(202);
    expect(response.body).toEqual({ status: 'ignored' });
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });

  it('queues a record wrapped in an envelope', async () => {
    await postSigned(receiver.app, { event: 'feedback.created', data: record }).expect(202);
    expect(await receiver.deliveries.queue.count()).toBe(1);
  });

  it('answers 415 to a body that is not JSON', async () => {
    const response = await request(receiver.app)
      .post('/webhooks/feedback')
      .set('Content-Type', 'text/plain')
      .set('X-Ybug-Signature', signHmacSha256('hi', TEST_SECRET))
      .send('hi');
    expect(response.status).toBe(415);
    expect(response.headers['content-type']).toMatch(PROBLEM);
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.body).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('answers 415 to a compressed body, whose signature would cover other bytes', async () => {
    const response = await postSigned(receiver.app, record, {
      headers: { 'Content-Encoding': 'gzip' },
    });
    expect(response.status).toBe(415);
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });

  it.each(['utf-16', 'ISO-8859-1', '"utf-16le"'])(
    'answers 415 to a JSON body in charset %s, which would be read as UTF-8 wrongly',
    async (charset) => {
      const body = JSON.stringify(record);
      const response = await request(receiver.app)
        .post('/webhooks/feedback')
        .set('Content-Type', `application/json; charset=${charset}`)
        .set('X-Ybug-Signature', signHmacSha256(body, TEST_SECRET))
        .send(body);
      expect(response.status).toBe(415);
      expect(response.body).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
      expect(await receiver.deliveries.queue.count()).toBe(0);
    },
  );

  it.each(['UTF-8', '"utf-8"', 'us-ascii'])(
    'accepts a JSON body in charset %s',
    async (charset) => {
      const body = JSON.stringify(record);
      await request(receiver.app)
        .post('/webhooks/feedback')
        .set('Content-Type', `application/json;charset=${charset}`)
        .set('X-Ybug-Signature', signHmacSha256(body, TEST_SECRET))
        .send(body)
        .expect(202);
    },
  );

  it('accepts application/*+json with a charset', async () => {
    const body = JSON.stringify(record);
    await request(receiver.app)
      .post('/webhooks/feedback')
      .set('Content-Type', 'application/vnd.ybug+json; charset=utf-8')
      .set('X-Ybug-Signature', signHmacSha256(body, TEST_SECRET))
      .send(body)
      .expect(202);
  });

  it('answers 400 naming the signature header when it is missing', async () => {
    const response = await request(receiver.app)
      .post('/webhooks/feedback')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(record));
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'SIGNATURE_MISSING' });
    expect(response.body.detail).toContain('X-Ybug-Signature');
  });

  it('answers 401 to a wrong signature without saying why, and logs why', async () => {
    const response = await postSigned(receiver.app, record, { secret: 'not the secret' });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({
      type: 'urn:feedback-receiver:error:signature-invalid',
      title: 'Signature invalid',
      status: 401,
      detail: 'The signature does not match the body.',
      code: 'SIGNATURE_INVALID',
    });
    expect(receiver.logs).toContainEqual(
      expect.objectContaining({ outcome: 'rejected', reason: 'signature_mismatch' }),
    );
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });

  it('answers 400 naming the signature header when it is sent twice', async () => {
    const body = JSON.stringify(record);
    // Node would join the two into "sha256=..., sha256=...", no signature at all.
    const response = await sendOnSocket({
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'x-ybug-signature': [signHmacSha256(body, TEST_SECRET), 'sha256=other'],
      },
      body: [body],
    });
    expect(response.status).toBe(400);
    expect(response.text).toContain('"code":"BAD_REQUEST"');
    expect(response.text).toContain('"detail":"Send the x-ybug-signature header once."');
    expect(receiver.logs).toContainEqual(expect.objectContaining({ reason: 'signature_repeated' }));
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });

  it('answers 401 to a malformed signature', async () => {
    const response = await request(receiver.app)
      .post('/webhooks/feedback')
      .set('Content-Type', 'application/json')
      .set('X-Ybug-Signature', 'sha256=nonsense')
      .send(JSON.stringify(record));
    expect(response.status).toBe(401);
    expect(receiver.logs).toContainEqual(
      expect.objectContaining({ reason: 'signature_malformed' }),
    );
  });

  it('writes neither the secret nor a signature to any log line', async () => {
    const signature = signHmacSha256(JSON.stringify(record), TEST_SECRET);
    await postSigned(receiver.app, record).expect(202);
    await postSigned(receiver.app, record).expect(200);
    await postSigned(receiver.app, record, { secret: 'wrong' }).expect(401);
    await postSigned(receiver.app, 'not json').expect(202);
    const logged = JSON.stringify(receiver.logs);
    expect(receiver.logs.length).toBeGreaterThanOrEqual(4);
    expect(logged).not.toContain(TEST_SECRET);
    expect(logged).not.toContain(signature.slice('sha256='.length));
  });

  it('answers 405 with Allow to other methods', async () => {
    const response = await request(receiver.app).get('/webhooks/feedback');
    expect(response.status).toBe(405);
    expect(response.headers.allow).toBe('POST');
  });

  it('answers 404 as a problem elsewhere', async () => {
    const response = await request(receiver.app).post('/webhooks/other').send('{}');
    expect(response.status).toBe(404);
    expect(response.headers['content-type']).toMatch(PROBLEM);
  });
});

describe('body limit', () => {
  beforeEach(async () => {
    receiver = await createTestReceiver({ bodyLimitBytes: 1024 });
  });

  it('answers 413 to a declared length over the limit', async () => {
    const body = JSON.stringify({ id: 'big', description: 'x'.repeat(2000) });
    const response = await postSigned(receiver.app, body);
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });

  it('answers 413 to a chunked body as soon as it passes the limit', async () => {
    const server = receiver.app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/webhooks/feedback',
        headers: {
          'Content-Type': 'application/json',
          'Transfer-Encoding': 'chunked',
          'X-Ybug-Signature': `sha256=${'0'.repeat(64)}`,
        },
      });
      // Send more than the limit but never end the body: the answer must not wait for the end.
      req.write('x'.repeat(600));
      req.write('x'.repeat(600));
      const [response] = (await once(req, 'response')) as [IncomingMessage];
      expect(response.statusCode).toBe(413);
      req.destroy();
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('answers 413 before the signature check', async () => {
    const response = await request(receiver.app)
      .post('/webhooks/feedback')
      .set('Content-Type', 'application/json')
      .send('x'.repeat(5000));
    expect(response.status).toBe(413);
  });
});

describe('secret rotation', () => {
  beforeEach(async () => {
    receiver = await createTestReceiver({ secrets: ['new-secret', 'old-secret'] });
  });

  it('accepts both the new and the old secret and logs which matched', async () => {
    await postSigned(receiver.app, { id: 'fb_new' }, { secret: 'new-secret' }).expect(202);
    await postSigned(receiver.app, { id: 'fb_old' }, { secret: 'old-secret' }).expect(202);
    await postSigned(receiver.app, { id: 'fb_bad' }, { secret: 'older-secret' }).expect(401);
    const matched = receiver.logs.filter((line) => line.outcome === 'queued');
    // Numbered from 1, as the console and the metrics number them.
    expect(matched.map((line) => line.secretIndex)).toEqual([1, 2]);
  });
});

describe('Standard Webhooks scheme', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const now = Date.parse('2026-11-22T10:00:00Z');
  const timestamp = String(Math.floor(now / 1000));

  beforeEach(async () => {
    receiver = await createTestReceiver({
      scheme: 'standard-webhooks',
      secrets: [secret],
      now: () => now,
    });
  });

  function post(body: string, headers: Record<string, string>) {
    return request(receiver.app)
      .post('/webhooks/feedback')
      .set('Content-Type', 'application/json')
      .set(headers)
      .send(body);
  }

  it('queues a delivery keyed by webhook-id', async () => {
    const body = JSON.stringify(record);
    const id = 'msg_2Kx9';
    const response = await post(body, {
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': signStandardWebhook({ id, timestamp, body }, secret),
    });
    expect(response.status).toBe(202);
    expect(response.body).toEqual({ status: 'queued', id });
  });

  it('accepts the svix- header aliases', async () => {
    const body = JSON.stringify(record);
    const id = 'msg_svix';
    await post(body, {
      'svix-id': id,
      'svix-timestamp': timestamp,
      'svix-signature': signStandardWebhook({ id, timestamp, body }, secret),
    }).expect(202);
  });

  it('answers 400 naming every missing header', async () => {
    const response = await post('{}', { 'webhook-id': 'msg_1' });
    expect(response.status).toBe(400);
    expect(response.body.detail).toBe('Missing headers: webhook-timestamp, webhook-signature.');
  });

  it('answers 400 to two webhook-signature headers, saying where several signatures go', async () => {
    const body = JSON.stringify(record);
    const id = 'msg_twice';
    const response = await sendOnSocket({
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'webhook-id': id,
        'webhook-timestamp': timestamp,
        'webhook-signature': [
          signStandardWebhook({ id, timestamp, body }, secret),
          `v1,${Buffer.alloc(32).toString('base64')}`,
        ],
      },
      body: [body],
    });
    expect(response.status).toBe(400);
    expect(response.text).toContain('"code":"BAD_REQUEST"');
    expect(response.text).toContain(
      '"detail":"Send the webhook-signature header once: several signatures go in it, space-separated."',
    );
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });

  it.each(['webhook-id', 'webhook-timestamp'])(
    'answers 400 naming %s when it is sent twice',
    async (name) => {
      const body = JSON.stringify(record);
      const id = 'msg_repeated';
      const headers: Record<string, string | string[]> = {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'webhook-id': id,
        'webhook-timestamp': timestamp,
        'webhook-signature': signStandardWebhook({ id, timestamp, body }, secret),
      };
      // The same value twice: still two headers, which Node would join into "a, a".
      headers[name] = [headers[name] as string, headers[name] as string];
      const response = await sendOnSocket({ headers, body: [body] });
      expect(response.status).toBe(400);
      expect(response.text).toContain('"code":"BAD_REQUEST"');
      expect(response.text).toContain(`"detail":"Send the ${name} header once."`);
      expect(receiver.logs).toContainEqual(
        expect.objectContaining({ reason: 'signature_repeated', repeated: name }),
      );
      expect(await receiver.deliveries.queue.count()).toBe(0);
    },
  );

  it('answers 401 to a stale timestamp and logs it as stale', async () => {
    const body = JSON.stringify(record);
    const id = 'msg_old';
    const stale = String(Number(timestamp) - 301);
    const response = await post(body, {
      'webhook-id': id,
      'webhook-timestamp': stale,
      'webhook-signature': signStandardWebhook({ id, timestamp: stale, body }, secret),
    });
    expect(response.status).toBe(401);
    expect(receiver.logs).toContainEqual(expect.objectContaining({ reason: 'signature_stale' }));
  });
});

describe('GET /healthz and /readyz', () => {
  beforeEach(async () => {
    receiver = await createTestReceiver();
  });

  it('answers ok and ready while Redis answers', async () => {
    await request(receiver.app).get('/healthz').expect(200, { status: 'ok' });
    await request(receiver.app).get('/readyz').expect(200, { status: 'ready' });
  });
});

function connectionOf(testReceiver: TestReceiver) {
  const { connection } = testReceiver;
  if (connection instanceof Cluster) throw new Error('the test receiver uses a single Redis');
  const { host, port } = connection.options;
  return { host: host ?? '127.0.0.1', port: port ?? 6379 };
}

describe('an internal error on the add', () => {
  it('answers 500 and logs no part of the delivery', async () => {
    receiver = await createTestReceiver();
    // A key of the wrong type where BullMQ's add script counts jobs: the add fails inside Redis,
    // and ioredis's error carries the command's arguments, the delivery among them.
    await receiver.connection.hset(`${receiver.prefix}:${DELIVERIES_QUEUE}:id`, 'x', 'y');
    const title = 'private-visitor-text-9f3a';
    await postSigned(receiver.app, { id: 'fb_internal', title }).expect(500);
    const line = receiver.logs.find((entry) => entry.msg === 'delivery not stored: internal error');
    expect(line?.err, 'the error is logged').toMatchObject({ message: expect.any(String) });
    expect(JSON.stringify(receiver.logs)).not.toContain(title);
  });
});

import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DELIVERIES_QUEUE } from '../../src/queue/deliveries-queue.js';
import { signHmacSha256 } from '../../src/webhooks/hmac-sha256.js';
import { startServe, type CliProcess } from '../helpers/cli-process.js';

const SECRET = 'two-receivers-secret';
const KEYS = 30;

const prefix = `e2e-${randomUUID().slice(0, 8)}`;
const receivers: { cli: CliProcess; url: string }[] = [];

beforeAll(async () => {
  const env = { WEBHOOK_SECRET: SECRET, REDIS_URL: inject('redisUrl'), QUEUE_PREFIX: prefix };
  receivers.push(...(await Promise.all([startServe(env), startServe(env)])));
});
afterAll(() => {
  for (const { cli } of receivers) cli.child.kill('SIGKILL');
});

describe('two receivers on one Redis', () => {
  it('answer one 202 queued per delivery between them, and 200 duplicate to the rest', async () => {
    const answers = await Promise.all(
      Array.from({ length: KEYS }, async (_, index) => {
        const body = JSON.stringify({ id: `fb_race_${index}`, title: 'Both at once' });
        const headers = {
          'Content-Type': 'application/json',
          'X-Ybug-Signature': signHmacSha256(Buffer.from(body), SECRET),
        };
        // The same signed delivery, to both receivers at the same moment.
        const responses = await Promise.all(
          receivers.map(({ url }) =>
            fetch(`${url}/webhooks/feedback`, { method: 'POST', headers, body }),
          ),
        );
        return Promise.all(
          responses.map(async (response) => {
            const { status } = (await response.json()) as { status: string };
            return `${response.status} ${status}`;
          }),
        );
      }),
    );
    for (const pair of answers) expect(pair.sort()).toEqual(['200 duplicate', '202 queued']);

    const queue = new Queue(DELIVERIES_QUEUE, {
      connection: { url: inject('redisUrl') },
      prefix,
    });
    try {
      expect(await queue.count()).toBe(KEYS);
    } finally {
      await queue.close();
    }
  });
});

// The latency bench's handler: when it starts, it pushes how long ago the delivery's POST left
// the sender (the `sent_at` the load generator put in the record, this machine's clock) onto the
// Redis list LATENCY_LIST, which the bench reads. The push goes after the time is taken, and the
// handler returns without waiting for it, so what it costs is not in the figure.
import { Redis } from 'ioredis';
import { defineHandler } from 'feedback-receiver';

const list = process.env.LATENCY_LIST;
if (!list) throw new Error('latency-handler: set LATENCY_LIST');
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

export default defineHandler({
  name: 'latency-probe',
  handle: ({ record }) => {
    const ms = Date.now() - Number(record.sent_at);
    redis.rpush(list, String(ms)).catch(() => undefined);
  },
});

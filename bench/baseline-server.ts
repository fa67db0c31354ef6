/**
 * The baselines the receiver is measured against, in the same run and on the same machine:
 * - `http`: node:http reading the body and answering 202;
 * - `express`: a bare Express 5 route with express.raw answering 202;
 * - `naive`: the receiver most people would write first: express.raw, an HMAC check, zod, and
 *   `queue.add` on a default ioredis connection, answering 202;
 * - `work`: the work every receiver must do and no more: express.raw, the HMAC check, JSON.parse,
 *   zod, and the job's JSON as a queue would write it, answering 202 without touching Redis. A
 *   ceiling: no receiver that stores its deliveries gets above it.
 * Usage: node baseline-server.js http|express|naive|work <port> [<secret> <redis url>]
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import { Queue } from 'bullmq';
import express, { type Request, type Response } from 'express';
import { Redis } from 'ioredis';
import { FeedbackRecordSchema, type FeedbackRecord } from '../src/webhooks/feedback-record.js';

const [kind, port, secret = '', redisUrl = ''] = process.argv.slice(2);
const WEBHOOK_PATH = '/webhooks/feedback';
const raw = express.raw({ type: 'application/json', limit: '1mb' });

function bareExpress(): RequestListener {
  const app = express();
  app.post(WEBHOOK_PATH, raw, (_req, res) => {
    res.status(202).json({ status: 'queued' });
  });
  return app;
}

/**
 * The naive receiver's checks: the HMAC, then the record through zod. Answers 401 or 400 itself
 * and returns undefined when a check fails.
 */
function verifiedRecord(req: Request, res: Response): FeedbackRecord | undefined {
  const body = req.body as Buffer;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  const given = Buffer.from(req.get('x-ybug-signature') ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    res.status(401).json({ error: 'invalid signature' });
    return undefined;
  }
  const parsed = FeedbackRecordSchema.safeParse(JSON.parse(body.toString('utf8')));
  if (!parsed.success) {
    res.status(400).json({ error: 'invalid payload' });
    return undefined;
  }
  return parsed.data;
}

function naiveReceiver(): RequestListener {
  const queue = new Queue('naive', {
    connection: new Redis(redisUrl, { maxRetriesPerRequest: null }),
  });
  const app = express();
  app.post(WEBHOOK_PATH, raw, async (req, res) => {
    const record = verifiedRecord(req, res);
    if (!record) return;
    await queue.add('feedback.created', record, { jobId: `fb-${record.id}` });
    res.status(202).json({ status: 'queued' });
  });
  return app;
}

/** Everything the naive receiver does but the queue: what a delivery costs before Redis. */
function workAlone(): RequestListener {
  const app = express();
  app.post(WEBHOOK_PATH, raw, (req, res) => {
    const record = verifiedRecord(req, res);
    if (!record) return;
    // What a queue writes for the job; the result is thrown away, the cost is the point.
    JSON.stringify({ event: 'feedback.created', receivedAt: new Date(), record });
    res.status(202).json({ status: 'queued' });
  });
  return app;
}

const bareHttp: RequestListener = (req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end('{"status":"queued"}');
  });
};

const listeners: Record<string, () => RequestListener> = {
  http: () => bareHttp,
  express: bareExpress,
  naive: naiveReceiver,
  work: workAlone,
};
const listener = (listeners[kind ?? ''] ?? (() => bareHttp))();
const server = createServer(listener);
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));

/**
 * bull-board at /admin/queues: the deliveries and handler-runs queues, the dead letter (failed
 * runs), retries. Mounted only when ADMIN_TOKEN is set, and then only for requests that carry it:
 * as a Bearer token, or as the password of HTTP basic auth so that a browser can log in.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { sendProblem } from './send-problem.js';

export const ADMIN_PATH = '/admin/queues';

export interface AdminDashboardOptions {
  readonly token: string;
  readonly queues: readonly Queue[];
}

export function createAdminRouter({ token, queues }: AdminDashboardOptions): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(ADMIN_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'feedback-receiver' } },
  });
  const router = express.Router();
  router.use(ADMIN_PATH, requireToken(token), serverAdapter.getRouter() as Router);
  return router;
}

function requireToken(token: string) {
  // Hashes have equal lengths, so timingSafeEqual can compare any two tokens.
  const expected = digest(token);
  return (req: Request, res: Response, next: NextFunction) => {
    const given = presentedToken(req.headers.authorization);
    if (given !== undefined && timingSafeEqual(digest(given), expected)) return next();
    res.setHeader('WWW-Authenticate', 'Basic realm="feedback-receiver admin", charset="UTF-8"');
    sendProblem(res, 'ADMIN_UNAUTHORIZED', 'The dashboard needs the admin token.');
  };
}

/** The token from `Bearer <token>`, or the password of `Basic <base64 user:password>`. */
function presentedToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const [scheme, value = ''] = header.split(' ', 2);
  if (scheme?.toLowerCase() === 'bearer') return value;
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon === -1 ? undefined : decoded.slice(colon + 1);
  }
  return undefined;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

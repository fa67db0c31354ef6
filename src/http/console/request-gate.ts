/**
 * A budget for the console: at most `running` of its requests are served at once and `waiting`
 * more wait their turn, first come first served; one more is answered 503 CONSOLE_BUSY. However
 * many operators search, the receiver's process and Redis spend a bounded share on them, and
 * deliveries keep the rest.
 */
import type { NextFunction, Request, Response } from 'express';
import { sendProblem } from '../send-problem.js';

export interface RequestGateOptions {
  readonly running: number;
  readonly waiting: number;
}

/** Console requests served at once: two searches keep one core busy between them. */
export const CONSOLE_REQUESTS_AT_ONCE: RequestGateOptions = { running: 2, waiting: 16 };

/** The console's and bull-board's static files, under the path the gate is mounted on. */
const STATIC = /^\/(assets|queues\/static)\//;

export function createRequestGate({ running, waiting }: RequestGateOptions) {
  let served = 0;
  const queue: (() => void)[] = [];

  const release = () => {
    const next = queue.shift();
    if (next) next();
    else served -= 1;
  };

  return function requestGate(req: Request, res: Response, next: NextFunction): void {
    // Static files cost nothing to serve, and a page loads several at once.
    if (STATIC.test(req.path)) return next();
    if (served < running) served += 1;
    else if (queue.length < waiting) {
      // Its turn comes when a served request ends, whose slot passes to it as is; a client that
      // goes away before its turn leaves the queue.
      queue.push(serve);
      res.once('close', () => {
        const at = queue.indexOf(serve);
        if (at !== -1) queue.splice(at, 1);
      });
      return;
    } else {
      res.setHeader('Retry-After', '1');
      return sendProblem(
        res,
        'CONSOLE_BUSY',
        `The console serves ${running} requests at once and ${waiting} more wait; try again in a second.`,
      );
    }
    serve();

    function serve() {
      // 'close' follows the answer's end, and a client that goes away: the slot is freed once.
      res.once('close', release);
      next();
    }
  };
}

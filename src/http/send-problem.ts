import type { Request, Response } from 'express';
import { problem, PROBLEM_CONTENT_TYPE, type ErrorCode } from '../errors.js';
import { discardRestOfBody } from './read-raw-body.js';

/**
 * Answers with an RFC 9457 problem for one of the registered error codes. A refusal often comes
 * before the body was read (415, 413, 405); the rest of it is then read and thrown away, within
 * bounds, so that the sender gets to read the answer.
 */
export function sendProblem(res: Response, code: ErrorCode, detail: string): void {
  if (!res.req.complete) discardRestOfBody(res.req, res);
  const body = problem(code, detail);
  // Also on routes helmet does not cover (the webhook route): a problem is never to be sniffed.
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.status(body.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
}

/** The answer for a path nothing serves. The path is the sender's text: a bounded part of it. */
export function sendNotFound(req: Request, res: Response): void {
  const path = req.path.length > 200 ? `${req.path.slice(0, 200)}…` : req.path;
  sendProblem(res, 'NOT_FOUND', `Nothing at ${req.method} ${path}.`);
}

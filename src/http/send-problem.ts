import type { Response } from 'express';
import { problem, PROBLEM_CONTENT_TYPE, type ErrorCode } from '../errors.js';

/** Answers with an RFC 9457 problem for one of the registered error codes. */
export function sendProblem(res: Response, code: ErrorCode, detail: string): void {
  const body = problem(code, detail);
  res.status(body.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
}

/**
 * The admin token check, for the console, bull-board and the receiver's /metrics: the token as a
 * Bearer token, or as the password of HTTP basic auth so that a browser can log in.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { sendProblem } from './send-problem.js';

/** Middleware that lets through only requests that carry `token`, and answers the rest 401. */
export function requireToken(token: string) {
  // Hashes have equal lengths, so timingSafeEqual can compare any two tokens.
  const expected = digest(token);
  return (req: Request, res: Response, next: NextFunction) => {
    const given = presentedToken(req.headers.authorization);
    if (given !== undefined && timingSafeEqual(digest(given), expected)) return next();
    res.setHeader('WWW-Authenticate', 'Basic realm="feedback-receiver admin", charset="UTF-8"');
    sendProblem(res, 'ADMIN_UNAUTHORIZED', 'This needs the admin token.');
  };
}

/** The token from `Bearer <token>`, or the password of `Basic <base64 user:password>`. */
function presentedToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  // One space or more after the scheme (RFC 9110's credentials), as clients send either.
  const [, scheme, value = ''] = /^(\S+) +(.*)$/.exec(header) ?? [];
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

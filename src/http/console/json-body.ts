/**
 * The JSON body of a console API request: `application/json` (or `application/*+json`) up to
 * 16 KiB. Another content type is refused with 415 rather than read as no body (400), and a
 * larger body with 413, both through the app's error handler.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { createError } from '../../errors.js';
import { isJsonContentType } from '../json-content-type.js';

const parseJson = express.json({ limit: '16kb' });

export function jsonBody(req: Request, res: Response, next: NextFunction): void {
  const hasBody =
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
  if (hasBody && !isJsonContentType(req.headers['content-type'])) {
    return next(createError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json.'));
  }
  parseJson(req, res, next);
}

import type { Express } from 'express';
import request from 'supertest';
import { signHmacSha256 } from '../../src/webhooks/hmac-sha256.js';
import { TEST_SECRET } from './test-receiver.js';

/** POSTs a body to the webhook route, signed with the default scheme. */
export function postSigned(
  app: Express,
  body: string | Buffer | object,
  {
    secret = TEST_SECRET,
    headers = {} as Record<string, string>,
    path = '/webhooks/feedback',
  } = {},
) {
  const raw = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return (
    request(app)
      .post(path)
      .set('Content-Type', 'application/json')
      .set('X-Ybug-Signature', signHmacSha256(raw, secret))
      .set(headers)
      // superagent would JSON-encode a Buffer sent as application/json; send the bytes as they are.
      .serialize((data: unknown) => data as string)
      .send(raw)
  );
}

/**
 * POSTs `record` as a delivery to a running receiver at `baseUrl`, over a real socket, signed
 * with `secret` as Ybug signs it.
 */
export function postDelivery(
  baseUrl: string,
  record: object,
  secret: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const body = JSON.stringify(record);
  return fetch(`${baseUrl}/webhooks/feedback`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Ybug-Signature': signHmacSha256(body, secret),
      ...headers,
    },
    body,
  });
}

/**
 * Reads a request body as raw bytes, bounded. body-parser reads an oversized body to its end
 * before it reports it; this stops at the limit, so a sender gets its 413 at once. What is left of
 * a refused body is then thrown away only within `DISCARD_LIMIT`, so a hostile sender cannot make
 * the receiver read more than that.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';

export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';
}

export class BodyIncompleteError extends Error {
  override readonly name = 'BodyIncompleteError';
}

const EMPTY = Buffer.alloc(0);

/**
 * @throws {BodyTooLargeError} as soon as the declared or received size passes `limit`.
 * @throws {BodyIncompleteError} if the client goes away before the body ends.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(new BodyTooLargeError());
  if (declared === 0) return Promise.resolve(EMPTY);

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onIncomplete);
      req.off('close', onIncomplete);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(new BodyTooLargeError());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onIncomplete = () => {
      cleanup();
      reject(new BodyIncompleteError());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onIncomplete);
    req.on('close', onIncomplete);
  });
}

/** How much of a refused body is read and thrown away, at most, so its sender sees the answer. */
export const DISCARD_LIMIT = { bytes: 16 * 1024 * 1024, ms: 5_000 };

/**
 * Reads and throws away the rest of a refused body, within `DISCARD_LIMIT`, and closes the
 * connection if the body goes on past it. Closing a socket with unread bytes makes the kernel
 * reset the connection, and a sender still uploading then loses the 413 it was sent (nginx's
 * "lingering close" solves the same problem). Call it before answering: the answer must not
 * close the connection itself, which Node does after any `Connection: close` answer.
 */
export function discardRestOfBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit = DISCARD_LIMIT,
): void {
  res.setHeader('Connection', 'keep-alive');
  throwAwayIncoming(req, () => req.socket.destroy(), limit);
}

/** Reads and throws away what `stream` still delivers; past `limit`, calls `giveUp`. */
export function throwAwayIncoming(
  stream: Readable,
  giveUp: () => void,
  limit = DISCARD_LIMIT,
): void {
  let discarded = 0;
  const timer = setTimeout(giveUp, limit.ms).unref();
  stream.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > limit.bytes) giveUp();
  });
  stream.once('close', () => clearTimeout(timer));
  stream.resume();
}

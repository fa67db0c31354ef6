/**
 * Answers a request that Node's HTTP parser refuses before the app sees it (headers too large,
 * a malformed request line, a request that took too long), with the answer Node itself gives,
 * then closes the connection the way `discardRestOfBody` does: reading and throwing away what
 * the sender still uploads, within DISCARD_LIMIT. Node's default closes at once, with unread
 * bytes, so the kernel resets the connection and a sender still writing loses its 431.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { DISCARD_LIMIT, throwAwayIncoming } from './read-raw-body.js';

/** Node's own answers (lib/_http_server.js), by the parser's error code. */
const ANSWERS: Readonly<Record<string, string>> = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: '413 Payload Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

/**
 * Sockets answered here. Node's parser stays on the socket and reports every later chunk as a
 * further client error, which must not end the discarding that has begun.
 */
const answered = new WeakSet<Duplex>();

/** A `clientError` listener for an `http.Server`. */
export function answerClientError(
  error: NodeJS.ErrnoException,
  stream: Duplex,
  limit = DISCARD_LIMIT,
): void {
  if (answered.has(stream)) return;
  // Node's own test: an answer whose headers went out cannot be followed by another.
  const socket = stream as Socket & { _httpMessage?: { headersSent: boolean } | null };
  if (!socket.writable || socket._httpMessage?.headersSent) {
    socket.destroy();
    return;
  }
  answered.add(stream);
  const status = ANSWERS[error.code ?? ''] ?? '400 Bad Request';
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  throwAwayIncoming(socket, () => socket.destroy(), limit);
}

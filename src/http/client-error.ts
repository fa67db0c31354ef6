/**
 * Answers a request that Node's HTTP parser refuses before the app sees it (headers too large,
 * a malformed request line, a request that took too long) with the status Node itself gives and
 * the short problem body every other refusal has, then closes the connection the way
 * `discardRestOfBody` does: reading and throwing away what the sender still uploads, within
 * DISCARD_LIMIT. Node's default answers with an empty body and closes at once, with unread
 * bytes, so the kernel resets the connection and a sender still writing loses its 431.
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { problem, PROBLEM_CONTENT_TYPE, type ErrorCode } from '../errors.js';
import { DISCARD_LIMIT, throwAwayIncoming } from './read-raw-body.js';

/** By the parser's error code, the refusals Node answers (lib/_http_server.js); else 400. */
const REFUSALS: Readonly<Record<string, { code: ErrorCode; detail: string }>> = {
  HPE_HEADER_OVERFLOW: {
    code: 'HEADERS_TOO_LARGE',
    detail: 'The request line and headers are larger than this server reads.',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    code: 'PAYLOAD_TOO_LARGE',
    detail: 'The chunk extensions are larger than this server reads.',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    code: 'REQUEST_TIMEOUT',
    detail: 'The request was not received in time.',
  },
};
const MALFORMED = { code: 'BAD_REQUEST', detail: 'The request is not valid HTTP/1.1.' } as const;

/**
 * Answers the client errors of `server` (its `clientError` event). Nothing is written to a
 * connection the client reset, one no longer writable, or one whose current answer has begun
 * (its headers went out: another answer cannot follow them); those are closed, as Node does.
 */
export function answerClientErrors(server: Server): void {
  // Node's parser stays on the socket and reports every later chunk as a further client error,
  // which must not end the discarding that has begun.
  const answered = new WeakSet<Duplex>();
  // Each connection's latest answer, seen through public events (Node looks at a private field).
  const current = new WeakMap<Duplex, ServerResponse>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => current.set(req.socket, res));
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    const answering = current.get(socket);
    if (
      error.code === 'ECONNRESET' ||
      !socket.writable ||
      (answering?.headersSent === true && !answering.writableFinished)
    ) {
      socket.destroy();
      return;
    }
    answered.add(socket);
    const { code, detail } = REFUSALS[error.code ?? ''] ?? MALFORMED;
    const answer = problem(code, detail);
    const body = JSON.stringify(answer);
    socket.end(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\n` +
        `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'X-Content-Type-Options: nosniff\r\n' +
        `Connection: close\r\n\r\n${body}`,
    );
    throwAwayIncoming(socket, () => socket.destroy(), DISCARD_LIMIT);
  });
}

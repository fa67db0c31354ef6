/**
 * One HTTP/1.1 request written by hand on a socket, with full control over what goes on the wire:
 * any method and path, repeated headers, a body in chunks with pauses between them. Like curl,
 * it stops sending once the answer starts and reads the answer even when the server closes
 * before the body is whole. Returns the status (0 when no answer came) and the answer's text.
 */
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface RawRequest {
  readonly method?: string;
  readonly path?: string;
  /** An array value sends the header once per item. */
  readonly headers?: Record<string, string | string[]>;
  /**
   * Sent in order; a number pauses that many milliseconds. Without a content-length header the
   * body is sent chunked.
   */
  readonly body?: readonly (Buffer | string | number)[];
}

export interface RawAnswer {
  readonly status: number;
  /** The status line, the headers and the body. */
  readonly text: string;
}

export function sendRaw(base: string, raw: RawRequest): Promise<RawAnswer> {
  const url = new URL(base);
  const headers = Object.entries(raw.headers ?? {}).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((item) => `${name}: ${item}\r\n`),
  );
  const chunked = raw.body !== undefined && !('content-length' in (raw.headers ?? {}));
  const head =
    `${raw.method ?? 'POST'} ${raw.path ?? '/webhooks/feedback'} HTTP/1.1\r\n` +
    `host: ${url.host}\r\nconnection: close\r\n${headers.join('')}` +
    `${chunked ? 'transfer-encoding: chunked\r\n' : ''}\r\n`;

  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    const received: Buffer[] = [];
    let answering = false;
    socket.setTimeout(30_000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      answering = true;
      received.push(chunk);
      if (isWhole(Buffer.concat(received))) socket.destroy();
    });
    socket.on('error', () => {}); // a reset after the answer is normal for a refused upload
    socket.on('close', () => {
      const text = Buffer.concat(received).toString('utf8');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text });
    });
    const send = async () => {
      const write = (data: Buffer | string) =>
        socket.write(data)
          ? Promise.resolve()
          : new Promise((done) => socket.once('drain', done).once('close', done));
      await write(head);
      for (const part of raw.body ?? []) {
        if (answering || socket.destroyed) return;
        if (typeof part === 'number') {
          await sleep(part);
          continue;
        }
        const bytes = Buffer.from(part);
        if (bytes.length === 0) continue;
        await write(
          chunked
            ? Buffer.concat([
                Buffer.from(`${bytes.length.toString(16)}\r\n`),
                bytes,
                Buffer.from('\r\n'),
              ])
            : bytes,
        );
      }
      if (chunked && !socket.destroyed) socket.write('0\r\n\r\n');
    };
    // A write that fails ends the connection, which resolves with what was received.
    socket.once('connect', () => void send().catch(() => socket.destroy()));
  });
}

/** Whether an answer with a content-length has all of its body (the server may keep the socket). */
function isWhole(answer: Buffer): boolean {
  const end = answer.indexOf('\r\n\r\n');
  if (end === -1) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(answer.subarray(0, end).toString('latin1'));
  return length !== null && answer.length - end - 4 >= Number(length[1]);
}

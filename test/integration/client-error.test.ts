import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { answerClientError } from '../../src/http/client-error.js';

let server: Server;
let port: number;
beforeEach(async () => {
  server = createServer((_req, res) => res.end('ok'));
  server.on('clientError', answerClientError);
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  port = (server.address() as AddressInfo).port;
});
afterEach(() => {
  server.closeAllConnections();
  server.close();
});

/**
 * Sends `head`, then goes on uploading 256 KiB in small pieces without reading, as a sender that
 * writes its whole request before it looks at the answer; then reads what came back.
 */
async function uploadThenRead(head: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.pause();
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(head);
  for (let sent = 0; sent < 262_144 && !socket.destroyed; sent += 16_384) {
    socket.write(Buffer.alloc(16_384, 'a'));
    await sleep(10);
  }
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.resume();
  await Promise.race([closed, sleep(3_000)]);
  socket.destroy();
  return Buffer.concat(received).toString('latin1');
}

describe("answers to requests Node's parser refuses", () => {
  it('reach a sender still uploading after headers too large (431)', async () => {
    const head = `POST /webhooks/feedback HTTP/1.1\r\nhost: x\r\nx-padding: ${'p'.repeat(20_000)}\r\ncontent-length: 262144\r\n\r\n`;
    expect(await uploadThenRead(head)).toMatch(
      /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/,
    );
  });

  it('answer a malformed request 400, as Node does', async () => {
    expect(await uploadThenRead('NOT HTTP AT ALL\r\n\r\n')).toMatch(
      /^HTTP\/1\.1 400 Bad Request\r\n/,
    );
  });
});

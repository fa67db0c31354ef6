import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { answerClientErrors } from '../../src/http/client-error.js';
import { startProbeServer } from '../../src/http/probe-server.js';

let server: Server;
let port: number;
/** Answers under way at /slow, each ended by the test. */
const slow: ServerResponse[] = [];
beforeEach(async () => {
  server = createServer((req, res) => {
    if (req.url !== '/slow') {
      res.end('ok');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('part of it');
    slow.push(res);
  });
  answerClientErrors(server);
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
async function uploadThenRead(head: string, to = port): Promise<string> {
  const socket = connect(to, '127.0.0.1');
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

/** The answer's status line, headers (names in lower case) and body. */
function parseAnswer(text: string) {
  const [head = '', body = ''] = text.split('\r\n\r\n', 2);
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  return { statusLine, headers, body };
}

const TOO_LARGE_HEAD = `POST /webhooks/feedback HTTP/1.1\r\nhost: x\r\nx-padding: ${'p'.repeat(20_000)}\r\ncontent-length: 262144\r\n\r\n`;

describe("answers to requests Node's parser refuses", () => {
  it('reach a sender still uploading after headers too large (431), with a problem body', async () => {
    const { statusLine, headers, body } = parseAnswer(await uploadThenRead(TOO_LARGE_HEAD));
    expect(statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(headers).toMatchObject({
      'content-type': 'application/problem+json',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
    });
    expect(JSON.parse(body)).toMatchObject({ status: 431, code: 'HEADERS_TOO_LARGE' });
  });

  it('answer a malformed request line 400, with a problem body', async () => {
    const { statusLine, headers, body } = parseAnswer(
      await uploadThenRead('NOT HTTP AT ALL\r\n\r\n'),
    );
    expect(statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(body)).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
  });

  it('write nothing after an answer whose headers went out: the connection closes', async () => {
    const refused = new Promise((resolve) => server.once('clientError', resolve));
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    // The second, malformed request arrives while the first is being answered.
    socket.write('GET /slow HTTP/1.1\r\nhost: x\r\n\r\nNOT HTTP AT ALL\r\n\r\n');
    await refused;
    await closed;
    for (const res of slow.splice(0)) res.destroy();
    expect(Buffer.concat(received).toString()).not.toContain('HTTP/1.1 400');
  });

  it('write nothing to a connection the client reset', async () => {
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    // What Node reports when a read meets a reset, on a socket that can still be written.
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    server.emit('clientError', reset, await accepted);
    await closed;
    expect(Buffer.concat(received).toString()).toBe('');
  });
});

describe("the probe server's answers to requests Node's parser refuses", () => {
  it('are problems too, 431 and 400', async () => {
    const probes = await startProbeServer({
      port: 0,
      host: '127.0.0.1',
      isReady: async () => true,
    });
    try {
      const probePort = Number(new URL(probes.url).port);
      const tooLarge = parseAnswer(await uploadThenRead(TOO_LARGE_HEAD, probePort));
      expect(tooLarge.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
      expect(JSON.parse(tooLarge.body)).toMatchObject({ code: 'HEADERS_TOO_LARGE' });
      const malformed = parseAnswer(await uploadThenRead('NOT HTTP AT ALL\r\n\r\n', probePort));
      expect(malformed.statusLine).toBe('HTTP/1.1 400 Bad Request');
      expect(JSON.parse(malformed.body)).toMatchObject({ code: 'BAD_REQUEST' });
    } finally {
      await probes.close();
    }
  });
});

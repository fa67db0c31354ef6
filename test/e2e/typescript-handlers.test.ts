/**
 * Handlers written in TypeScript, loaded as they are (no build step) where Node strips types, and
 * refused in one sentence where it cannot.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { postDelivery } from '../helpers/signed-request.js';
import { runCli, startServe, workerStarted, type CliProcess } from '../helpers/cli-process.js';
import { findNode24, nodeWithoutTypeStripping } from '../helpers/node-versions.js';

const SECRET = 'e2e-typescript-secret';
const EXAMPLE = 'examples/handlers/notify-chat.ts';
const node24 = findNode24();

let processes: CliProcess[] = [];
let servers: Server[] = [];
afterEach(async () => {
  for (const cli of processes) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
  await Promise.all(processes.map((cli) => cli.exited()));
  processes = [];
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  servers = [];
});

/** A chat's incoming webhook: keeps the JSON bodies posted to it. */
async function startChat(): Promise<{ url: string; messages: unknown[] }> {
  const messages: unknown[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      messages.push(JSON.parse(body));
      res.end('ok');
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, messages };
}

function work(env: Record<string, string>, options: Parameters<typeof runCli>[2]): CliProcess {
  const cli = runCli(['work'], { REDIS_URL: inject('redisUrl'), ...env }, options);
  processes.push(cli);
  return cli;
}

describe('handlers in TypeScript', () => {
  it.skipIf(node24 === undefined)(
    // Skipped only where no Node 24 is found: .ci/run always provides one (NODE24).
    `loads ${EXAMPLE} as it is on Node 24 and runs it on a delivery${node24 ? '' : ' (no Node 24 found: set NODE24 or run bash .ci/node24)'}`,
    async () => {
      const prefix = `e2e-ts-${randomUUID().slice(0, 8)}`;
      const chat = await startChat();
      const { cli: receiver, url } = await startServe({
        WEBHOOK_SECRET: SECRET,
        REDIS_URL: inject('redisUrl'),
        QUEUE_PREFIX: prefix,
      });
      processes.push(receiver);
      const worker = work(
        { QUEUE_PREFIX: prefix, HANDLERS: EXAMPLE, NOTIFY_CHAT_URL: chat.url },
        { node: node24! },
      );
      await workerStarted(worker);

      const record = { id: 'fb_ts', title: 'App crashes on upload', rating: 1 };
      const response = await postDelivery(url, record, SECRET);
      expect(response.status).toBe(202);
      await vi.waitFor(
        () => expect(chat.messages, `the chat message\n${worker.output()}`).toHaveLength(1),
        { timeout: 5_000 },
      );
      expect(chat.messages[0]).toEqual({ text: 'Feedback fb_ts (rated 1): App crashes on upload' });
      expect(worker.output()).not.toContain(chat.url);
    },
  );

  it.skipIf(node24 === undefined)(
    'stops the worker at start, in one sentence, on TypeScript that Node cannot strip (an enum)',
    async () => {
      const worker = work(
        { QUEUE_PREFIX: 'e2e-ts-enum', HANDLERS: 'test/fixtures/handlers/uses-enum.ts' },
        { node: node24! },
      );
      expect(await worker.exited()).toBe(1);
      expect(worker.output()).toBe(
        'feedback-receiver: HANDLERS: cannot load test/fixtures/handlers/uses-enum.ts: TypeScript enum is not supported in strip-only mode (Node strips types but compiles nothing: no enum, namespace or parameter properties)\n',
      );
    },
  );

  it('stops the worker at start with one sentence naming the Node it needs, on a Node that cannot strip types', async () => {
    const { node, nodeArgs, version } = nodeWithoutTypeStripping();
    const worker = work(
      { QUEUE_PREFIX: 'e2e-ts-refused', HANDLERS: EXAMPLE, NOTIFY_CHAT_URL: 'http://127.0.0.1:1' },
      { node, nodeArgs },
    );
    expect(await worker.exited()).toBe(1);
    expect(worker.output()).toBe(
      `feedback-receiver: HANDLERS: ${EXAMPLE} is TypeScript, which Node ${version} cannot run as it is: run the worker on Node 22.18 or later (24 recommended), or compile the handler to JavaScript\n`,
    );
  });
});

/**
 * A small HTTP server on 127.0.0.1 standing in for the feedback API in tests: it checks the
 * Bearer token, answers the three endpoints, records every request, and can be told to answer
 * anything else (an error status, a hang, a dropped connection).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const API_TOKEN = 'tok_test_5f1e9a77c2';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
  /** Milliseconds since the epoch when it arrived. */
  readonly at: number;
}

export type Answer =
  { status: number; body?: unknown; headers?: Record<string, string> } | 'hang' | 'drop';

/** Returns an answer to override the default one, or undefined to keep it. */
export type Responder = (
  request: RecordedRequest,
) => Answer | undefined | Promise<Answer | undefined>;

export interface FakeFeedbackApi {
  readonly url: string;
  readonly requests: RecordedRequest[];
  respondWith(responder: Responder | undefined): void;
  close(): Promise<void>;
}

export async function startFakeFeedbackApi(): Promise<FakeFeedbackApi> {
  const requests: RecordedRequest[] = [];
  let responder: Responder | undefined;

  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const request: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body: text === '' ? undefined : (JSON.parse(text) as unknown),
      at: Date.now(),
    };
    requests.push(request);
    const answered = (await responder?.(request)) ?? defaultAnswer(request);
    if (answered === 'hang') return;
    if (answered === 'drop') {
      req.socket.destroy();
      return;
    }
    res.writeHead(answered.status, { 'Content-Type': 'application/json', ...answered.headers });
    res.end(answered.body === undefined ? '' : JSON.stringify(answered.body));
  };
  // A request the fake cannot read (a body that is not JSON) is answered 500, not left unhandled.
  const server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respondWith: (next) => {
      responder = next;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function defaultAnswer(request: RecordedRequest): Answer {
  if (request.headers.authorization !== `Bearer ${API_TOKEN}`) {
    return { status: 401, body: { errors: ['Unauthorized'] } };
  }
  const patch = /^\/v1\/feedback\/([^/]+)$/.exec(request.path);
  if (request.method === 'PATCH' && patch) {
    const body = request.body as Record<string, unknown>;
    const { assignee_id: assigneeId, ...fields } = body;
    return {
      status: 200,
      body: {
        id: decodeURIComponent(patch[1]!),
        ...fields,
        ...(assigneeId === undefined ? {} : { assignee: { id: assigneeId, name: 'Someone' } }),
        updated_at: new Date().toISOString(),
      },
    };
  }
  if (request.method === 'GET' && request.path === '/v1/me') {
    return { status: 200, body: { id: 'usr_1', name: 'Dana Tester', email: 'dana@example.com' } };
  }
  const hooks = /^\/v1\/projects\/([^/]+)\/hooks$/.exec(request.path);
  if (request.method === 'POST' && hooks) {
    const { event, target_url: targetUrl } = request.body as Record<string, string>;
    return {
      status: 201,
      body: {
        id: 'hook_1',
        event,
        target_url: targetUrl,
        active: true,
        created_at: new Date().toISOString(),
      },
    };
  }
  return { status: 404, body: { errors: ['Not found'] } };
}

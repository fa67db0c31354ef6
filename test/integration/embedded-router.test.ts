import express from 'express';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createLogger,
  createSignatureScheme,
  createWebhookRouter,
  type WebhookRouteDeps,
} from '../../src/index.js';
import { postSigned } from '../helpers/signed-request.js';
import { createTestReceiver, TEST_SECRET, type TestReceiver } from '../helpers/test-receiver.js';

let receiver: TestReceiver;
let deps: WebhookRouteDeps;

beforeEach(async () => {
  receiver = await createTestReceiver();
  deps = {
    scheme: createSignatureScheme({
      scheme: 'hmac-sha256',
      secrets: [TEST_SECRET],
      signatureHeader: 'X-Ybug-Signature',
      toleranceSeconds: 300,
    }),
    bodyLimitBytes: 65_536,
    invalidPayload: 'quarantine',
    deliveries: receiver.deliveries,
    quarantine: receiver.quarantine,
    logger: createLogger({ level: 'silent' }),
  };
});
afterEach(async () => {
  await receiver.close();
});

describe('createWebhookRouter in an existing Express app', () => {
  it("serves the route at the path given, beside the app's own JSON routes", async () => {
    const app = express();
    app.use(createWebhookRouter(deps, { path: '/hooks/ybug' }));
    app.use(express.json());
    app.post('/api/echo', (req, res) => {
      res.json(req.body);
    });

    await postSigned(app, { id: 'fb_embedded' }, { path: '/hooks/ybug' }).expect(202);
    expect(await receiver.deliveries.queue.count()).toBe(1);
    const echoed = await postSigned(app, { hello: 'app' }, { path: '/api/echo' }).expect(200);
    expect(echoed.body).toEqual({ hello: 'app' });
  });

  it('answers 500 when a JSON parser ran before it, and queues nothing', async () => {
    const app = express();
    app.use(express.json());
    app.use(createWebhookRouter(deps));
    const response = await postSigned(app, { id: 'fb_parsed' });
    expect(response.status).toBe(500);
    expect(await receiver.deliveries.queue.count()).toBe(0);
  });
});

// An Express app that mounts the webhook route, as docs/embedding.md shows: .ci/package-check
// type-checks it once express and @types/express are installed, as an embedder has them.
import express from 'express';
import {
  createLogger,
  createReceiverDeps,
  createWebhookRouter,
  loadReceiverConfig,
} from 'feedback-receiver';

const config = loadReceiverConfig();
const deps = createReceiverDeps(config, createLogger({ level: config.logLevel }));
const app = express();
app.use(createWebhookRouter(deps, { path: '/hooks/ybug' }));
app.use(express.json());
app.get('/hello', (_req, res) => {
  res.json({ hello: 'world' });
});
app.listen(config.port);

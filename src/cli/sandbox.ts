import { createLogger } from '../logger.js';
import { loadSeed, SANDBOX_STARTUP_TOKEN, SANDBOX_TOKEN } from '../sandbox/seed.js';
import { startSandbox } from '../sandbox/server.js';
import { parseWholeNumber, requireOption, type Command } from './command.js';
import { assertPortFree } from './port-free.js';
import { stopOnSignal } from './stop-on-signal.js';

export const sandboxCommand: Command = {
  name: 'sandbox',
  summary: 'run a local stand-in for the feedback service',
  help: `Usage: feedback-receiver sandbox [--port 4010] [--host 127.0.0.1] [--seed <file>]
         [--rate-limit 100]

Runs an HTTP server that behaves as the feedback API's spec describes (Bearer
auth, plans, GET /v1/me, PATCH /v1/feedback/{id}, POST /v1/projects/{id}/hooks,
a per-token rate limit), with state in memory. Its own routes:
  POST /sandbox/projects/{id}/feedback   create a record; delivers feedback.created
                                         to the project's hooks, signed, with retries
  GET  /sandbox/feedback/{id}            read a record back
  GET  /sandbox/deliveries               every delivery attempt so far
Seed tokens: ${SANDBOX_TOKEN} (Company plan), ${SANDBOX_STARTUP_TOKEN} (Startup plan, no API access).`,
  options: {
    port: { type: 'string', default: '4010' },
    host: { type: 'string', default: '127.0.0.1' },
    seed: { type: 'string' },
    'rate-limit': { type: 'string', default: '100' },
  },
  async run(values) {
    const port = parseWholeNumber(values, 'port', 0, 65535);
    const limit = parseWholeNumber(values, 'rate-limit', 1);
    // An empty --host= would listen on every interface, the seed tokens open to the network.
    const host = requireOption(values, 'host', 'sandbox');
    // Said with the option's name before anything starts, where listen would say EADDRINUSE.
    await assertPortFree(
      '--port',
      port,
      { setting: '--host', address: host },
      'give --port another one',
    );
    const logger = createLogger({ level: 'info' });
    const running = stopOnSignal(logger, 'sandbox');
    const sandbox = await startSandbox({
      port,
      host,
      logger,
      rateLimit: { limit, windowMs: 60_000 },
      ...(typeof values.seed === 'string' ? { seed: loadSeed(values.seed) } : {}),
    });
    running.add(sandbox.close);
    logger.info({ url: sandbox.url }, 'sandbox listening');
  },
};

import { loadProbePorts } from '../config.js';
import type { Command } from './command.js';

export const healthcheckCommand: Command = {
  name: 'healthcheck',
  summary: "probe this machine's receiver or worker (the container's HEALTHCHECK)",
  help: `Usage: feedback-receiver healthcheck

Exits 0 when GET /healthz answers 200 on 127.0.0.1 at PORT (a receiver) or at
METRICS_PORT (a worker), 1 otherwise. The image's HEALTHCHECK runs it, whichever
command the container runs.`,
  async run() {
    const { port, metricsPort } = loadProbePorts();
    for (const candidate of [port, metricsPort]) {
      try {
        const response = await fetch(`http://127.0.0.1:${candidate}/healthz`, {
          signal: AbortSignal.timeout(2_000),
        });
        if (response.ok) return;
      } catch {
        // nothing listening there; try the other port
      }
    }
    throw new Error(`no /healthz answered on port ${port} or ${metricsPort}`);
  },
};

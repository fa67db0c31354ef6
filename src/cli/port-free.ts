import { once } from 'node:events';
import { createServer } from 'node:net';

/** The port a process is configured to listen on is taken by another. */
export class PortTakenError extends Error {
  override readonly name = 'PortTakenError';
}

/**
 * Fails when something already listens on the port, so a start can refuse before it starts
 * anything that would have to be stopped again. Port 0 (any free port) always passes.
 *
 * @throws {PortTakenError}
 */
export async function assertPortFree(variable: string, port: number, host?: string): Promise<void> {
  if (port === 0) return;
  const server = createServer();
  server.listen(port, host);
  try {
    await once(server, 'listening');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new PortTakenError(
        `${variable}: port ${port} is already in use; stop what listens there, or set ${variable} to another port`,
      );
    }
    throw error;
  }
  await new Promise((resolve) => server.close(resolve));
}

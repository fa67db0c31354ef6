import { once } from 'node:events';
import { createServer } from 'node:net';

/** The port a process is configured to listen on is taken by another. */
export class PortTakenError extends Error {
  override readonly name = 'PortTakenError';
}

/**
 * Fails when something already listens on the port, or the host is not one this machine can
 * listen on, so a start can refuse before it starts anything that would have to be stopped
 * again. Port 0 (any free port) is always free.
 *
 * @param setting what sets the port: a variable (`PORT`) or an option (`--port`), named first
 * @param host the address to listen on, and what sets it (`HOST`, `--host`)
 * @param otherPort how to give another port; default: set the variable to another port
 * @throws {PortTakenError} for a port in use; an Error naming the host's setting for a host
 */
export async function assertPortFree(
  setting: string,
  port: number,
  host?: { readonly setting: string; readonly address: string },
  otherPort = `set ${setting} to another port`,
): Promise<void> {
  if (port === 0 && host === undefined) return;
  const server = createServer();
  server.listen(port, host?.address);
  try {
    await once(server, 'listening');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new PortTakenError(
        `${setting}: port ${port} is already in use; stop what listens there, or ${otherPort}`,
      );
    }
    // Node's words ("getaddrinfo ENOTFOUND x") name neither the setting nor what is wrong.
    const problem = HOST_PROBLEMS[code ?? ''];
    if (host && problem) {
      throw new Error(`${host.setting}: cannot listen on ${host.address}: ${problem}`, {
        cause: error,
      });
    }
    throw error;
  }
  await new Promise((resolve) => server.close(resolve));
}

const HOST_PROBLEMS: Readonly<Record<string, string>> = {
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'its name cannot be looked up now',
  EADDRNOTAVAIL: 'it is not an address of this machine',
};

/**
 * Fails when two of a process's listeners are set to the same port: the second listen would fail
 * with EADDRINUSE after the first started (and, under `start`, after its Redis and worker did).
 * Port 0 (any free port) never clashes.
 *
 * @throws {PortTakenError}
 */
export function assertPortsApart(
  first: { variable: string; port: number },
  second: { variable: string; port: number },
): void {
  if (first.port === 0 || first.port !== second.port) return;
  throw new PortTakenError(
    `${second.variable}: port ${second.port} is ${first.variable}'s too, and one port cannot serve both; set ${second.variable} to another port`,
  );
}

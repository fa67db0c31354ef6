/**
 * A page server and Debian's Chromium for the browser tests (playwright-core drives it; browsers
 * cannot be downloaded here). The flags keep Chromium off the network this machine does not have.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Serves `app` on 127.0.0.1, on a port the system picks. */
export async function serveOnLoopback(
  app: RequestListener,
): Promise<{ server: Server; url: string; close(): void }> {
  const server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** `app` on loopback and a Chromium to look at it; `close` ends both. */
export async function openInChromium(
  app: RequestListener,
): Promise<{ url: string; browser: Browser; close(): Promise<void> }> {
  const served = await serveOnLoopback(app);
  try {
    const browser = await launchChromium();
    return {
      url: served.url,
      browser,
      close: async () => {
        await browser.close();
        served.close();
      },
    };
  } catch (error) {
    served.close();
    throw error;
  }
}

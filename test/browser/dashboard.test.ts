/**
 * The dashboard in a real browser (Debian's chromium, driven by playwright-core): log in with the
 * admin token, see a failed handler run, retry it.
 */
import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { loadReceiverConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { Redis } from 'ioredis';
import { announceHandlers } from '../../src/runs/handler-roster.js';
import { createRunQueue, runQueueName } from '../../src/runs/run-queues.js';
import { createReceiverDeps, type ReceiverDeps } from '../../src/receiver.js';
import { launchChromium, serveOnLoopback } from '../helpers/browser.js';

const ADMIN_TOKEN = 'admin-token-7c1f0e9b5a';
const prefix = `e2e-admin-${randomUUID().slice(0, 8)}`;

let deps: ReceiverDeps;
let served: Awaited<ReturnType<typeof serveOnLoopback>> | undefined;
let url: string;
let browser: Browser;

beforeAll(async () => {
  deps = createReceiverDeps(
    loadReceiverConfig({
      WEBHOOK_SECRET: 'dashboard-secret',
      ADMIN_TOKEN,
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: prefix,
    }),
    createLogger({ level: 'silent' }),
  );
  served = await serveOnLoopback(createApp(deps));
  url = served.url;
  browser = await launchChromium();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  served?.close();
  await deps?.close();
});

/** A handler run that failed for good, as the dead letter holds them. */
async function failedRun(): Promise<string> {
  // A worker with this handler has started: the dashboard shows the queues of the roster's.
  const roster = new Redis(inject('redisUrl'));
  await announceHandlers(roster, prefix, [{ name: 'notify-team', attempts: 1 }], {
    id: 'a-worker',
    runningForMs: 60_000,
  });
  roster.disconnect();
  const queue = createRunQueue({ url: inject('redisUrl') }, prefix, 'notify-team');
  const worker = new Worker(
    runQueueName('notify-team'),
    async () => {
      throw new Error('downstream said no');
    },
    { connection: { url: inject('redisUrl'), maxRetriesPerRequest: null }, prefix },
  );
  try {
    const job = await queue.add(
      'notify-team',
      {
        delivery: {
          key: 'feedback.created:fb_dash',
          event: 'feedback.created',
          receivedAt: new Date().toISOString(),
          record: { id: 'fb_dash' },
        },
      },
      { jobId: 'd-feedback.created%3Afb_dash.notify-team', attempts: 1 },
    );
    await vi.waitFor(
      async () => expect(await queue.getJobState(job.id!), 'the run to fail').toBe('failed'),
      { timeout: 5_000 },
    );
    return job.id!;
  } finally {
    await worker.close();
    await queue.close();
  }
}

describe('the dashboard at /admin/queues', () => {
  it('answers 401 without the admin token, and asks a browser to log in', async () => {
    const response = await fetch(`${url}/admin/queues`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic /);
    const wrong = await fetch(`${url}/admin/queues`, { headers: { Authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const bearer = await fetch(`${url}/admin/queues`, {
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(bearer.status).toBe(200);
  });

  it('lets a browser log in, see a failed handler run and retry it', async () => {
    const jobId = await failedRun();
    const context = await browser.newContext({
      httpCredentials: { username: 'admin', password: ADMIN_TOKEN },
    });
    try {
      const page = await context.newPage();
      await page.goto(`${url}/admin/queues/queue/${runQueueName('notify-team')}?status=failed`);
      await page.getByText('downstream said no').first().waitFor({ timeout: 15_000 });
      await page.getByRole('button', { name: 'Retry all' }).click();
      await page.getByRole('button', { name: 'Confirm' }).click();
      const queue = createRunQueue({ url: inject('redisUrl') }, prefix, 'notify-team');
      try {
        await vi.waitFor(
          async () =>
            expect(
              await queue.getJobState(jobId),
              'the retried run to leave the failed set',
            ).not.toBe('failed'),
          { timeout: 10_000 },
        );
      } finally {
        await queue.close();
      }
    } finally {
      await context.close();
    }
  }, 60_000);

  it('asks no other site for anything, and leads back to the console', async () => {
    const context = await browser.newContext({
      httpCredentials: { username: 'admin', password: ADMIN_TOKEN },
    });
    try {
      const page = await context.newPage();
      const elsewhere: string[] = [];
      page.on('request', (request) => {
        if (new URL(request.url()).host !== new URL(url).host) elsewhere.push(request.url());
      });
      const response = await page.goto(`${url}/admin/queues`);
      expect(response?.headers()['content-security-policy']).toContain("font-src 'self'");
      // bull-board puts its links (uiConfig.miscLinks) in the menu at the header's end.
      const menu = page.locator('header ul > li:last-child > button[aria-haspopup="menu"]');
      await menu.waitFor({ timeout: 15_000 });
      await page.waitForLoadState('networkidle');
      expect(elsewhere, 'requests to other hosts').toEqual([]);
      await menu.click();
      await page.getByRole('menuitem', { name: 'Delivery console' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/admin');
    } finally {
      await context.close();
    }
  }, 60_000);
});

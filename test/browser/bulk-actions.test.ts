/**
 * Acting on a search result in a real browser: search the deliveries, retry every failed run the
 * search finds after the page says how many, and run a handler added later over them (a
 * backfill), choosing the handler, confirming the count and following the progress to its end.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/worker/handler.js';
import type { WorkerRuntime } from '../../src/worker/runtime.js';
import { launchChromium, serveOnLoopback } from '../helpers/browser.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'bulk-browser-token-93ac2e';
let env: TestWorkerEnv;
let served: Awaited<ReturnType<typeof serveOnLoopback>> | undefined;
let url: string;
let browser: Browser;
let firstWorker: WorkerRuntime;
let carrierUp = false;
const labelled: string[] = [];

const handlers = [
  defineHandler({
    name: 'notify-carrier',
    attempts: 1,
    handle: ({ record }) => {
      if (!carrierUp && record.title?.includes('parcel')) throw new Error('carrier API down');
    },
  }),
];

/** Until it holds: worker round trips on a busy machine take their time. */
const eventually = <T>(check: () => T | Promise<T>) =>
  vi.waitFor(check, { timeout: 10_000, interval: 50 });

beforeAll(async () => {
  env = await createTestWorkerEnv();
  const worker = await env.startWorker({ handlers });
  firstWorker = worker;
  await env.deliver({ id: 'fb_bb1', title: 'Where is my parcel' });
  await env.deliver({ id: 'fb_bb2', title: 'The parcel came broken' });
  await env.deliver({ id: 'fb_bb3', title: 'Great support' });
  await env.failedRuns(2);
  await env.historyHolds(3);
  served = await serveOnLoopback(createTestAdminApp(env, worker.runQueues, TOKEN));
  url = served.url;
  browser = await launchChromium();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  served?.close();
  await env?.close();
});

async function loggedIn() {
  const context = await browser.newContext({
    httpCredentials: { username: 'operator', password: TOKEN },
  });
  return { context, page: await context.newPage() };
}

it('retries every failed run a search finds, after saying how many, and shows the progress', async () => {
  const { context, page } = await loggedIn();
  try {
    await page.goto(`${url}/admin/deliveries`);
    await page.getByRole('searchbox', { name: 'Search' }).fill('parcel');
    await page.getByRole('button', { name: 'Search' }).click();
    expect(await page.locator('table.deliveries tbody tr').count()).toBe(2);
    await page.getByRole('link', { name: 'Retry their failed runs…' }).click();
    await page.getByText('2 failed runs will start again').waitFor();
    carrierUp = true;
    await page.getByRole('button', { name: 'Queue 2 runs' }).click();
    // The progress page reloads itself until the action is over.
    await page.getByText('Done: 2 of 2 runs queued.').waitFor();
    await env.completedRuns(3);
  } finally {
    await context.close();
  }
});

it('runs a handler added later on a search result, once the operator confirms the count', async () => {
  await env.startWorker({
    handlers: [
      ...handlers,
      defineHandler({ name: 'label', handle: ({ record }) => void labelled.push(record.id) }),
    ],
  });
  // A rolling deploy done: the worker without the new handler is gone.
  await firstWorker.close(1_000);
  const { context, page } = await loggedIn();
  try {
    await page.goto(`${url}/admin/deliveries?q=parcel`);
    await page.getByRole('link', { name: 'Run a handler on them…' }).click();
    await page.getByLabel('Handler').selectOption('label');
    await page.getByLabel('Since').fill('1h');
    await page.getByRole('button', { name: 'Count the runs' }).click();
    await page.getByText('2 runs of label will be queued').waitFor();
    await page.getByRole('button', { name: 'Queue 2 runs' }).click();
    await page.getByText('Done: 2 of 2 runs queued.').waitFor();
    await eventually(() => expect(labelled.sort()).toEqual(['fb_bb1', 'fb_bb2']));
  } finally {
    await context.close();
  }
});

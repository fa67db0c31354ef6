/**
 * The console on a phone (390×844) and the marks every page carries (issue 29, items 2 and 11):
 * with the header row hidden, each table cell says what it is; the navigation marks the current
 * page; the icon is served; the overview's chart is in the reader's local time, like every time;
 * and a search without failed runs offers no retry of them.
 */
import { UnrecoverableError } from 'bullmq';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createDeliveryStats } from '../../src/queue/delivery-stats.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { launchChromium, serveOnLoopback } from '../helpers/browser.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'phone-token-61c0a9';
/** Half an hour off UTC, so that a time in UTC cannot pass for local time. */
const TIME_ZONE = 'Asia/Kolkata';
const PHONE = { width: 390, height: 844 };

/** The page's own, in the functions run there: this file is compiled without the DOM's types. */
declare const getComputedStyle: (
  element: unknown,
  pseudo?: string,
) => { content: string; display: string; fontWeight: string };

let env: TestWorkerEnv;
let served: Awaited<ReturnType<typeof serveOnLoopback>> | undefined;
let url: string;
let browser: Browser;
let context: BrowserContext;

beforeAll(async () => {
  env = await createTestWorkerEnv();
  const worker = await env.startWorker({
    handlers: [
      defineHandler({
        name: 'notify-team',
        attempts: 1,
        handle: ({ record }) => {
          if (record.title === 'Broken') throw new UnrecoverableError('the team channel said no');
        },
      }),
    ],
  });
  await env.deliver({ id: 'fb_phone_ok', title: 'Fine', rating: 2, project_id: 'prj_shop' });
  await env.deliver({ id: 'fb_phone_broken', title: 'Broken', rating: 4 });
  await env.completedRuns(1);
  await env.failedRuns(1);
  await env.historyHolds(2);
  // What a receiver counts as it answers: two deliveries, signed with the first secret.
  const stats = createDeliveryStats({
    connection: env.connection,
    prefix: env.prefix,
    logger: createLogger({ level: 'silent' }),
  });
  for (let n = 0; n < 2; n += 1) {
    stats.count('queued');
    stats.secretMatched(0);
  }
  await stats.close();
  served = await serveOnLoopback(createTestAdminApp(env, worker.runQueues, TOKEN));
  url = served.url;
  browser = await launchChromium();
  context = await browser.newContext({
    httpCredentials: { username: 'operator', password: TOKEN },
    viewport: PHONE,
    timezoneId: TIME_ZONE,
    locale: 'en-GB',
  });
}, 30_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  served?.close();
  await env?.close();
});

async function open(path: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${url}${path}`);
  return page;
}

/** Each cell of a table's first row: what it shows before its content, and its own text. */
async function labelledCells(page: Page, table: string): Promise<[string, string][]> {
  return page
    .locator(`${table} tbody tr`)
    .first()
    .locator('td')
    .evaluateAll((cells) =>
      cells
        .filter((cell) => getComputedStyle(cell).display !== 'none')
        .map((cell) => [
          getComputedStyle(cell, '::before').content,
          (cell as unknown as { innerText: string }).innerText.trim(),
        ]),
    );
}

describe('at 390×844', () => {
  it('hides the header rows, and labels every cell of the queues and secrets cards', async () => {
    const page = await open('/admin');
    try {
      const queues = page.locator('.tile', { hasText: 'Queues' }).locator('table');
      const secrets = page.locator('.tile', { hasText: 'Secrets that matched' }).locator('table');
      expect(await queues.locator('thead').isVisible()).toBe(false);
      expect(await labelledCells(page, '.tile:has(h2:text-is("Queues")) table')).toEqual([
        ['"Queue"', expect.any(String)],
        ['"Waiting"', expect.stringMatching(/^\d+$/)],
        ['"Active"', expect.stringMatching(/^\d+$/)],
        ['"Delayed"', expect.stringMatching(/^\d+$/)],
        ['"Failed"', expect.stringMatching(/^\d+$/)],
      ]);
      expect(await secrets.locator('thead').isVisible()).toBe(false);
      expect(
        await labelledCells(page, '.tile:has(h2:text-is("Secrets that matched")) table'),
      ).toEqual([
        ['"Secret"', '#1 (the first in WEBHOOK_SECRET)'],
        ['"Last hour"', '2'],
        ['"Last 24 hours"', '2'],
      ]);
    } finally {
      await page.close();
    }
  });

  it('says which number in the deliveries list is the rating', async () => {
    const page = await open('/admin/deliveries?q=fb_phone_ok');
    try {
      expect(await page.locator('table.deliveries thead').isVisible()).toBe(false);
      expect(await labelledCells(page, 'table.deliveries')).toEqual([
        ['"Received"', expect.any(String)],
        ['"Title"', 'Fine'],
        ['"Project"', 'prj_shop'],
        ['"Rating"', '2'],
        ['"Handlers"', expect.stringContaining('notify-team: completed')],
      ]);
    } finally {
      await page.close();
    }
  });

  it('labels the cells of the quarantine list', async () => {
    await env.quarantine.add({
      receivedAt: new Date().toISOString(),
      reason: 'schema',
      issues: [{ path: 'rating', message: 'expected a number' }],
      headers: {},
      body: Buffer.from('{"id":"fb_phone_q"}'),
    });
    const page = await open('/admin/quarantine');
    try {
      expect(await labelledCells(page, 'table')).toEqual([
        ['"Received"', expect.any(String)],
        ['"Reason"', 'schema'],
        ['"Issues"', 'rating: expected a number'],
        ['"Size"', '19 bytes'],
      ]);
    } finally {
      await page.close();
    }
  });
});

describe('on every page', () => {
  it('marks the current page in the navigation', async () => {
    for (const [path, current] of [
      ['/admin', 'Overview'],
      ['/admin/deliveries', 'Deliveries'],
      [`/admin/deliveries/${encodeURIComponent('feedback.created:fb_phone_ok')}`, 'Deliveries'],
      ['/admin/quarantine', 'Quarantine'],
      ['/admin/dead-letter', 'Dead letter'],
    ] as const) {
      const page = await open(path);
      try {
        const marked = page.locator('header nav a[aria-current="page"]');
        expect(await marked.allInnerTexts(), path).toEqual([current]);
        const weight = (name: string) =>
          page
            .locator('header nav a', { hasText: name })
            .evaluate((link) => getComputedStyle(link).fontWeight);
        expect(Number(await weight(current)), 'the current page stands out').toBeGreaterThan(
          Number(await weight(current === 'Overview' ? 'Deliveries' : 'Overview')),
        );
      } finally {
        await page.close();
      }
    }
  });

  it('has an icon, and nothing it asks for is missing', async () => {
    const page = await context.newPage();
    const missing: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) missing.push(`${response.status()} ${response.url()}`);
    });
    try {
      await page.goto(`${url}/admin`);
      const icon = await page.locator('link[rel="icon"]').getAttribute('href');
      const answer = await page.request.get(new URL(icon!, url).href);
      expect(answer.status()).toBe(200);
      expect(answer.headers()['content-type']).toMatch(/^image\/svg\+xml/);
      expect(missing).toEqual([]);
    } finally {
      await page.close();
    }
  });
});

describe('the overview chart', () => {
  it('is in local time, like every time in the console', async () => {
    const page = await open('/admin');
    try {
      const label = page.locator('svg.chart > text[data-minute]');
      const minute = (await label.getAttribute('data-minute'))!;
      const local = new Intl.DateTimeFormat('en-GB', {
        hour: '2-digit',
        minute: '2-digit',
        timeZone: TIME_ZONE,
      }).format(new Date(minute));
      expect((await label.textContent())?.trim()).toBe(local);
      const bars = (await page.locator('svg.chart title').allTextContents()).map((text) =>
        text.trim(),
      );
      expect(bars).toHaveLength(60);
      for (const bar of bars) expect(bar).toMatch(/^\d\d:\d\d: (1 delivery|\d+ deliveries)$/);
      expect(await page.locator('svg.chart').textContent()).not.toContain('UTC');
    } finally {
      await page.close();
    }
  });
});

describe('a search', () => {
  it('offers to retry failed runs only when it found some', async () => {
    const none = await open('/admin/deliveries?q=fb_phone_ok');
    try {
      expect(await none.getByRole('link', { name: 'Run a handler on them…' }).count()).toBe(1);
      expect(await none.getByRole('link', { name: 'Retry their failed runs…' }).count()).toBe(0);
    } finally {
      await none.close();
    }
    const some = await open('/admin/deliveries?q=fb_phone_broken');
    try {
      expect(await some.getByRole('link', { name: 'Retry their failed runs…' }).count()).toBe(1);
    } finally {
      await some.close();
    }
  });
});

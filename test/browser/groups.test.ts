/**
 * Similar feedback's pages in a real browser (issue 30, item 5): reports of one problem, written
 * four ways and routed by a real worker, make a group that the Groups page shows with its arrivals
 * as bars; its page lists them; a delivery's page shows its group and its matches, and takes it
 * out of the group; a page of another site cannot.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSimilarGroups, type SimilarGroups } from '../../src/grouping/similar-groups.js';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { launchChromium, serveOnLoopback } from '../helpers/browser.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'groups-token-4f1c9a2e';
const HOSTILE_TITLE = '<img src=x onerror="window.pwned=1">Pay button stays grey at checkout';
/** Reports of one problem, written four ways over the day: id, hours ago, title, description. */
const REPORTS = [
  ['fb_pay_1', 20, 'Pay button stays grey at checkout', 'The pay button at checkout stays grey.'],
  ['fb_pay_2', 14, 'Checkout pay button stays grey', 'At checkout the pay button stays grey.'],
  ['fb_pay_3', 6, 'pay button grey at checkout!!', 'checkout pay button stays grey, cant pay'],
  ['fb_pay_4', 1, HOSTILE_TITLE, '<script>window.pwned=2</script> the pay button stays grey'],
] as const;
/** Other feedback of the day: a second problem reported twice, and praise (a group of one). */
const OTHERS = [
  ['fb_search_1', 3, 'Search finds nothing for "running shoes"', 'No results for running shoes.'],
  ['fb_search_2', 2, 'search shows no results for running shoes', 'Searching running shoes: none.'],
  ['fb_dark_mode', 1, 'Love the new dark mode', 'Easier on the eyes at night.'],
] as const;
const FIRST_KEY = 'feedback.created:fb_pay_1';
const deliveryPath = (id: string) =>
  `/admin/deliveries/${encodeURIComponent(`feedback.created:${id}`)}`;

let env: TestWorkerEnv;
let groups: SimilarGroups;
let served: Awaited<ReturnType<typeof serveOnLoopback>> | undefined;
let url: string;
let browser: Browser;

beforeAll(async () => {
  // A day's history: the reports arrived over the last 20 hours.
  env = await createTestWorkerEnv({ dedupeTtlSeconds: 2 * 24 * 60 * 60 });
  // One at a time: each report is compared with the ones before it.
  const worker = await env.startWorker({
    handlers: [defineHandler({ name: 'noop', handle: () => {} })],
    concurrency: 1,
    similar: { threshold: 0.35, keep: 1_000 },
  });
  const all = [...REPORTS, ...OTHERS].sort(([, a], [, b]) => b - a);
  for (const [id, hoursAgo, title, description] of all) {
    // As the receiver queues it, received then.
    await env.producer.enqueue({
      key: `feedback.created:${id}`,
      event: 'feedback.created',
      receivedAt: new Date(Date.now() - hoursAgo * 3_600_000).toISOString(),
      record: { id, project_id: 'prj_shop', title, description, rating: 2 },
    });
  }
  await env.completedRuns(all.length);
  await env.historyHolds(all.length);
  groups = createSimilarGroups({
    connection: env.connection,
    prefix: env.prefix,
    ttlSeconds: env.dedupeTtlSeconds,
  });
  const app = createTestAdminApp(env, worker.runQueues, TOKEN, { similar: true });
  served = await serveOnLoopback(app);
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
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  return { context, page, dialogs };
}

it('shows the group the worker made, with its arrivals as bars, and runs nothing of its text', async () => {
  const { context, page, dialogs } = await loggedIn();
  try {
    await page.goto(`${url}/admin`);
    await page.getByRole('link', { name: 'Groups' }).click();
    await page.getByRole('heading', { name: 'Groups' }).waitFor();
    const row = page.locator('tr', { hasText: 'Pay button stays grey at checkout' }).first();
    expect(await row.getByRole('link', { name: '4 deliveries' }).count()).toBe(1);
    const chart = row.getByRole('img');
    expect(await chart.getAttribute('aria-label')).toMatch(/^Last day: 4 arrivals/);
    const heights = await chart
      .locator('rect')
      .evaluateAll((bars) => bars.map((bar) => Number(bar.getAttribute('height'))));
    // 24 hours, a bar each: the four reports came in four different hours.
    expect(heights).toHaveLength(24);
    expect(heights.filter((height) => height > 0)).toHaveLength(4);
    expect(await page.getByRole('link', { name: '2 deliveries' }).count()).toBe(1);
    // The praise is alone in its group: the list shows groups of two or more.
    expect(await page.getByText('Love the new dark mode').count()).toBe(0);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    expect(dialogs).toEqual([]);
    if (process.env.GROUPS_SCREENSHOT) {
      // docs/console.md's and the README's picture: GROUPS_SCREENSHOT=docs/groups.png npm run test:browser
      await page.setViewportSize({ width: 1200, height: 520 });
      await page.screenshot({ path: process.env.GROUPS_SCREENSHOT });
    }
    await row.getByRole('link', { name: 'Pay button stays grey at checkout' }).click();
    expect(page.url()).toBe(`${url}${deliveryPath('fb_pay_1')}`);
  } finally {
    await context.close();
  }
});

it('lists the group’s deliveries on its page, linked, the hostile title as text', async () => {
  const { context, page, dialogs } = await loggedIn();
  try {
    await page.goto(`${url}/admin/groups`);
    await page.getByRole('link', { name: '4 deliveries' }).click();
    const links = page.locator('table.deliveries a');
    expect(await links.evaluateAll((all) => all.map((link) => link.getAttribute('href')))).toEqual(
      expect.arrayContaining(REPORTS.map(([id]) => deliveryPath(id))),
    );
    expect(await links.count()).toBe(4);
    // The title, from the delivery history, whole (the markup in it shown as text).
    expect(await page.getByRole('link', { name: HOSTILE_TITLE, exact: true }).count()).toBe(1);
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    expect(dialogs).toEqual([]);
  } finally {
    await context.close();
  }
});

it('refuses a detach posted by a page of another site, and leaves the group as it was', async () => {
  const target = `${url}${deliveryPath('fb_pay_3')}/detach`;
  const attacker = await serveOnLoopback((_req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<form method="post" action="${target}"><button>Win a prize</button></form>`);
  });
  const { context, page } = await loggedIn();
  try {
    // localhost is another site than 127.0.0.1, as any other host would be.
    await page.goto(attacker.url.replace('127.0.0.1', 'localhost'));
    const [answer] = await Promise.all([
      page.waitForResponse(target),
      page.getByRole('button', { name: 'Win a prize' }).click(),
    ]);
    expect(answer.status()).toBe(403);
    expect((await groups.ofDelivery('feedback.created:fb_pay_3'))?.group).toMatchObject({
      size: 4,
    });
  } finally {
    await context.close();
    attacker.close();
  }
});

it('shows a delivery’s group and matches, and takes it out of the group', async () => {
  const { context, page } = await loggedIn();
  try {
    await page.goto(`${url}${deliveryPath('fb_pay_3')}`);
    const similar = page.locator('section.similar');
    await similar.getByRole('link', { name: 'group of 4 deliveries' }).waitFor();
    const matches = similar.locator('ol.matches li');
    expect(await matches.count()).toBe(2); // the reports before it
    expect(await matches.first().locator('.score').textContent()).toMatch(/^(0\.\d\d|1\.00)$/);
    await similar.getByRole('button', { name: 'Take out of its group' }).click();
    await page.getByText('Taken out of its group').waitFor();
    expect(await similar.textContent()).toContain('group of its own');
    expect(await similar.getByRole('button').count()).toBe(0);
    expect((await groups.ofDelivery('feedback.created:fb_pay_3'))?.group.size).toBe(1);
    expect((await groups.ofDelivery(FIRST_KEY))?.group.size).toBe(3);
  } finally {
    await context.close();
  }
});

/**
 * The delivery console in a real browser (Debian's chromium, driven by playwright-core): log in
 * with the admin token, find a delivery by its feedback id, open it and see the triage rule that
 * fired; a record written to attack the page renders as text and runs nothing; retry a failed
 * run, run a completed one again after confirming, and replay a quarantined delivery.
 */
import { UnrecoverableError } from 'bullmq';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { defineHandler } from '../../src/worker/handler.js';
import { parseTriageRules } from '../../src/worker/triage/rules.js';
import { createTriageHandler } from '../../src/worker/triage/triage-handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';
import { launchChromium, serveOnLoopback } from '../helpers/browser.js';

const TOKEN = 'console-token-8b3e1d7f';
const HOSTILE_TITLE =
  '<img src=x onerror="window.pwned=1;alert(1)"><script>window.pwned=2</script>';

/** Until a test says otherwise, notify-team fails for good on the record "Needs the team". */
let teamReachable = false;
/** The records notify-team has handled, once per run. */
const notified: string[] = [];
let env: TestWorkerEnv;
let served: Awaited<ReturnType<typeof serveOnLoopback>> | undefined;
let url: string;
let browser: Browser;

beforeAll(async () => {
  env = await createTestWorkerEnv();
  const rules = parseTriageRules(
    JSON.stringify({
      rules: [
        { name: 'unhappy-customers', when: { field: 'rating', lte: 2 }, set: { priority_id: 4 } },
      ],
    }),
    'test',
  );
  const worker = await env.startWorker({
    handlers: [
      createTriageHandler({ rules, dryRun: true }),
      defineHandler({
        name: 'notify-team',
        handle: ({ record }) => {
          if (record.title === 'Needs the team' && !teamReachable) {
            throw new UnrecoverableError('the team channel said no');
          }
          notified.push(record.id);
        },
      }),
    ],
  });
  await env.deliver({
    id: 'fb_browser_1',
    feedback_id: 1042,
    project_id: 'prj_shop',
    title: 'App crashes at checkout',
    description: 'I tap "Pay" and the app closes. Happens every time since the update.',
    rating: 1,
    priority: 'Normal',
    type: 'Bug',
    status: 'New',
    reporter: { name: 'Ana Costa', email: 'ana@example.com' },
    url: 'https://shop.example.com/checkout',
    screenshot_url: 'https://cdn.example.com/shots/1042.png',
    console_log_url: 'https://cdn.example.com/logs/1042.json',
    tags: [
      { id: 't1', name: 'checkout' },
      { id: 't2', name: 'mobile' },
    ],
    custom_fields: [{ id: 'cf1', name: 'Order', value: 'A-77812' }],
    client_context: {
      browser: 'Safari',
      browser_version: '18.1',
      os_name: 'iOS',
      os_version: '18.1',
      device_type: 'mobile',
      screen_width: 390,
      screen_height: 844,
      geo: { city: 'Lisbon', region: 'Lisbon', country_code: 'PT' },
    },
  });
  await env.deliver({ id: 'fb_browser_2', title: 'Love it', rating: 5 });
  await env.deliver({
    id: 'fb_browser_xss',
    title: HOSTILE_TITLE,
    description: '<script>window.pwned=3</script>',
    url: 'javascript:window.pwned=4',
    rating: 3,
  });
  await env.deliver({ id: 'fb_browser_dead', title: 'Needs the team', rating: 4 });
  await env.completedRuns(7);
  await env.failedRuns(1);
  await env.historyHolds(4);
  const app = createTestAdminApp(env, worker.runQueues, TOKEN);
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

it('finds a delivery by its feedback id, and shows the triage rule that fired', async () => {
  const { context, page } = await loggedIn();
  try {
    await page.goto(`${url}/admin/deliveries`);
    await page.getByRole('searchbox', { name: 'Search' }).fill('fb_browser_1');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'App crashes at checkout' }).click();
    await page.getByRole('heading', { name: 'App crashes at checkout' }).waitFor();
    expect(await page.getByText('Rules that fired: unhappy-customers.').count()).toBe(1);
    expect(await page.getByText('Would send').textContent()).toContain('"priority_id":4');
    // Times read in local time, with the UTC value on hover.
    expect(await page.locator('time').first().getAttribute('title')).toMatch(/ UTC$/);
    if (process.env.CONSOLE_SCREENSHOT) {
      // docs/console.md's picture: CONSOLE_SCREENSHOT=docs/console.png npm run test:browser
      await page.setViewportSize({ width: 1200, height: 800 });
      await page.screenshot({ path: process.env.CONSOLE_SCREENSHOT, fullPage: true });
    }
  } finally {
    await context.close();
  }
});

it('renders a hostile record as text, and no script of it runs', async () => {
  const { context, page, dialogs } = await loggedIn();
  try {
    for (const path of [
      '/admin/deliveries',
      `/admin/deliveries/${encodeURIComponent('feedback.created:fb_browser_xss')}`,
    ]) {
      await page.goto(`${url}${path}`, { waitUntil: 'load' });
      expect(await page.evaluate('window.pwned')).toBeUndefined();
      expect(await page.locator('a[href^="javascript:" i]').count()).toBe(0);
      expect(await page.locator('main img, main script').count()).toBe(0);
    }
    expect(await page.locator('h1').textContent()).toBe(HOSTILE_TITLE);
    expect(await page.getByText('javascript:window.pwned=4').count()).toBe(1);
    expect(dialogs).toEqual([]);
  } finally {
    await context.close();
  }
});

it('retries a dead-letter run from its page, and the run then succeeds', async () => {
  teamReachable = true;
  const { context, page } = await loggedIn();
  try {
    await page.goto(`${url}/admin/dead-letter`);
    await page.getByText('the team channel said no').waitFor();
    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await page.getByText('Queued again, with all of its attempts.').waitFor();
    const deliveryPage = `${url}/admin/deliveries/${encodeURIComponent('feedback.created:fb_browser_dead')}`;
    await vi.waitFor(
      async () => {
        await page.goto(deliveryPage);
        expect(await page.locator('.runs').textContent(), 'the retried run').toMatch(
          /notify-team\s+completed/,
        );
      },
      { timeout: 10_000 },
    );
  } finally {
    await context.close();
  }
});

it('runs a completed handler again once the operator confirms', async () => {
  const { context, page } = await loggedIn();
  try {
    await page.goto(
      `${url}/admin/deliveries/${encodeURIComponent('feedback.created:fb_browser_2')}`,
    );
    await page
      .locator('li', { hasText: 'notify-team' })
      .getByRole('link', { name: 'Run again…' })
      .click();
    await page.getByText('may happen twice').waitFor();
    expect(notified.filter((id) => id === 'fb_browser_2')).toHaveLength(1);
    await page.getByRole('button', { name: 'Run again' }).click();
    await page.getByText('Queued to run again').waitFor();
    await vi.waitFor(() => expect(notified.filter((id) => id === 'fb_browser_2')).toHaveLength(2), {
      timeout: 10_000,
    });
  } finally {
    await context.close();
  }
});

it('replays a quarantined delivery from its page', async () => {
  await env.quarantine.add({
    receivedAt: new Date().toISOString(),
    reason: 'schema',
    issues: [{ path: 'rating', message: 'expected a number' }],
    headers: {},
    body: Buffer.from(JSON.stringify({ id: 'fb_browser_replay', title: 'Kept, then fixed' })),
  });
  const { context, page } = await loggedIn();
  try {
    await page.goto(`${url}/admin/quarantine`);
    await page.locator('a[href^="/admin/quarantine/q-"]').first().click();
    await page.getByText('{"id":"fb_browser_replay"', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Replay' }).click();
    await page.getByText('Replayed: the delivery is queued').waitFor();
    // Listed once a worker has routed it.
    await vi.waitFor(async () => {
      await page.goto(`${url}/admin/deliveries?q=fb_browser_replay`);
      expect(await page.getByRole('link', { name: 'Kept, then fixed' }).count()).toBe(1);
    });
  } finally {
    await context.close();
  }
});

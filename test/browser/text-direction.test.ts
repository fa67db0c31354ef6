/**
 * Visitor text that carries direction controls, in a real browser: a title (and a record id, a
 * handler's error, a quarantined body) with U+202E RIGHT-TO-LEFT OVERRIDE turns itself only, never
 * what the page puts after it, on the groups page, a group's page, the deliveries list, a
 * delivery's page, the quarantine and the dead letter.
 */
import { UnrecoverableError } from 'bullmq';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { defineHandler } from '../../src/worker/handler.js';
import { createTestAdminApp } from '../helpers/admin-app.js';
import { openInChromium } from '../helpers/browser.js';
import { createTestWorkerEnv, type TestWorkerEnv } from '../helpers/test-worker.js';

const TOKEN = 'direction-token-8b3e1d';
const RLO = '\u202E';
/** The first of a group of two: its title overrides the direction of all after its start. */
const TURNED = `${RLO}Pay button stays grey at checkout`;
const TURNED_ID = `fb_${RLO}turned`;

let env: TestWorkerEnv;
let opened: Awaited<ReturnType<typeof openInChromium>> | undefined;
let url: string;
let browser: Browser;

beforeAll(async () => {
  env = await createTestWorkerEnv();
  const worker = await env.startWorker({
    handlers: [
      defineHandler({
        name: 'picky',
        handle: ({ record }) => {
          if (record.id === TURNED_ID) throw new UnrecoverableError(`refused ${record.title}`);
        },
      }),
    ],
    concurrency: 1,
    similar: { threshold: 0.35, keep: 1_000 },
  });
  const reports = [
    [TURNED_ID, TURNED],
    ['fb_plain', 'Pay button stays grey at checkout!!'],
  ] as const;
  for (const [id, title] of reports) {
    await env.deliver({ id, project_id: `prj_${RLO}shop`, title, description: 'It stays grey.' });
    await env.historyHolds(id === TURNED_ID ? 1 : 2);
  }
  await env.completedRuns(1);
  await env.failedRuns(1);
  await env.quarantine.add({
    receivedAt: new Date().toISOString(),
    reason: 'schema',
    issues: [{ path: `title${RLO}`, message: 'expected a string' }],
    headers: { 'x-note': `${RLO}sent by` },
    body: Buffer.from(JSON.stringify({ id: 'fb_q', title: [`${RLO}turned`] })),
  });
  opened = await openInChromium(
    createTestAdminApp(env, worker.runQueues, TOKEN, { similar: true }),
  );
  ({ url, browser } = opened);
}, 30_000);

afterAll(async () => {
  await opened?.close();
  await env?.close();
});

async function withPage(use: (page: Page) => Promise<void>): Promise<void> {
  const context = await browser.newContext({
    httpCredentials: { username: 'operator', password: TOKEN },
  });
  try {
    await use(await context.newPage());
  } finally {
    await context.close();
  }
}

/** The text of the page's body that holds a direction control and is not inside a `<bdi>`. */
function unisolated(page: Page): Promise<string[]> {
  // As the page's own script: this project's types know no DOM.
  return page.evaluate(`(() => {
    const found = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent ?? '';
      if (/[\\u202a-\\u202e\\u2066-\\u2069]/.test(text) && !node.parentElement?.closest('bdi')) {
        found.push(text);
      }
    }
    return found;
  })()`);
}

/** Whether `after` starts at or right of where `before` ends, as in a left-to-right line. */
async function followsOnItsLine(page: Page, before: string, after: string): Promise<boolean> {
  const [left, right] = await Promise.all([
    page.locator(before).first().boundingBox(),
    page.locator(after).first().boundingBox(),
  ]);
  return left !== null && right !== null && right.x >= left.x + left.width - 0.5;
}

it('isolates every piece of visitor text on every page that shows it', async () => {
  await withPage(async (page) => {
    await page.goto(`${url}/admin/groups`);
    const groupLink = page.locator('td[data-label="Size"] a').first();
    const groupPath = await groupLink.getAttribute('href');
    const paths = [
      '/admin/groups',
      groupPath!,
      '/admin/deliveries',
      `/admin/deliveries/${encodeURIComponent(`feedback.created:${TURNED_ID}`)}`,
      `/admin/deliveries/${encodeURIComponent('feedback.created:fb_plain')}`,
      '/admin/quarantine',
      '/admin/dead-letter',
    ];
    for (const path of paths) {
      await page.goto(`${url}${path}`);
      expect(await page.locator('main').textContent(), path).toContain(RLO);
      expect(await unisolated(page), path).toEqual([]);
    }
    // The tab's title, where no markup goes: closed by a pop directional isolate.
    await page.goto(`${url}${paths[3]}`);
    expect(await page.title()).toBe(`\u2068${TURNED}\u2069 · feedback-receiver`);
    await page.goto(`${url}/admin/quarantine`);
    await page.locator('a[href^="/admin/quarantine/q-"]').first().click();
    expect(await unisolated(page)).toEqual([]);
    // The body byte for byte: the override shown as its bytes, not obeyed.
    expect(await page.locator('pre.body').textContent()).toContain('\\xE2\\x80\\xAEturned');
  });
});

it('keeps what follows a turned title after it, not before it', async () => {
  await withPage(async (page) => {
    await page.goto(`${url}/admin/groups`);
    await page.locator('td[data-label="Size"] a').first().click();
    // The group's page: the first report's "first" badge stays right of its title.
    const row = 'tr:has(span.state)';
    expect(
      await followsOnItsLine(page, `${row} td[data-label="Title"] a`, `${row} span.state`),
    ).toBe(true);
    // The other report's page: its match's score stays right of the turned title.
    await page.goto(`${url}/admin/deliveries/${encodeURIComponent('feedback.created:fb_plain')}`);
    expect(await followsOnItsLine(page, '.matches li a', '.matches li .score')).toBe(true);
  });
});

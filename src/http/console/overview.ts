/**
 * The console's first page: what the receivers answered in the last hour and day, deliveries per
 * minute over the hour, the depths of the queues and the dead letter, and which secret position
 * signatures match (so an operator sees when an old secret can go).
 */
import { groupDeadLetter, type DeadLetterGroup } from '../../runs/dead-letter.js';
import type { Counts, StatsSnapshot } from '../../queue/delivery-stats.js';
import type { QuarantineSummary } from '../../queue/quarantine.js';
import type { ConsoleSources } from './console-sources.js';
import { html, type Html } from './html.js';
import { CONSOLE_PATH, layout } from './pages.js';
import { plural } from './plural.js';

export interface Overview {
  readonly stats: StatsSnapshot;
  readonly queues: readonly { readonly name: string; readonly counts: Counts }[];
  readonly deadLetter: number;
  readonly quarantine: number;
}

/** Most entries the quarantine and dead-letter pages (and their API) show. */
const MOST_SHOWN = 500;

/** The newest quarantine entries, and how many there are in all. */
export async function readQuarantine(
  sources: ConsoleSources,
): Promise<{ entries: QuarantineSummary[]; total: number }> {
  const [entries, total] = await Promise.all([
    sources.quarantine.list({ limit: MOST_SHOWN }),
    sources.quarantine.count(),
  ]);
  return { entries, total };
}

/** The newest failed runs by handler and reason, and how many there are in all. */
export async function readDeadLetter(
  sources: ConsoleSources,
): Promise<{ groups: DeadLetterGroup[]; total: number }> {
  const [entries, total] = await Promise.all([
    sources.deadLetter.list({ limit: MOST_SHOWN }),
    sources.deadLetter.count(),
  ]);
  return { groups: groupDeadLetter(entries), total };
}

export async function readOverview(sources: ConsoleSources): Promise<Overview> {
  const [stats, queues, deadLetter, quarantine] = await Promise.all([
    sources.readStats(),
    readQueueCounts(sources),
    sources.deadLetter.count(),
    sources.quarantine.count(),
  ]);
  return { stats, queues, deadLetter, quarantine };
}

// Its own function, so that its awaits happen inside the Promise.all: awaiting the queues' list
// while building the array would leave readStats's rejection unhandled when that list fails.
async function readQueueCounts(sources: ConsoleSources): Promise<Overview['queues']> {
  return Promise.all(
    (await sources.queues()).map(async (queue) => ({
      name: queue.name,
      counts: await queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed'),
    })),
  );
}

/** The outcomes in the order a reader expects them. */
const OUTCOMES = ['queued', 'duplicate', 'quarantined', 'ignored'] as const;

export function overviewPage(overview: Overview): Html {
  const { stats } = overview;
  return layout(
    'Overview',
    'overview',
    html`<h1>Overview</h1>
      <section class="tiles">
        ${outcomesTile('Last hour', stats.lastHour)} ${outcomesTile('Last 24 hours', stats.lastDay)}
      </section>
      <section>
        <h2>Deliveries per minute, last hour</h2>
        ${
          stats.perMinute.some(({ counts }) => total(counts) > 0)
            ? perMinuteChart(stats.perMinute)
            : html`<p class="empty">
                No deliveries in the last hour: send one with <code>feedback-receiver send</code>.
              </p>`
        }
      </section>
      <section class="tiles">
        <div class="tile">
          <h2>Queues</h2>
          <table>
            <thead>
              <tr>
                <th>queue</th>
                <th>waiting</th>
                <th>active</th>
                <th>delayed</th>
                <th>failed</th>
              </tr>
            </thead>
            <tbody>
              ${overview.queues.map(
                ({ name, counts }) =>
                  html`<tr>
                    <td data-label="Queue">${name}</td>
                    <td data-label="Waiting">${counts.waiting ?? 0}</td>
                    <td data-label="Active">${counts.active ?? 0}</td>
                    <td data-label="Delayed">${counts.delayed ?? 0}</td>
                    <td data-label="Failed">${counts.failed ?? 0}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
          <p>
            <a href="${CONSOLE_PATH}/dead-letter">Dead letter</a>: ${overview.deadLetter} ·
            <a href="${CONSOLE_PATH}/quarantine">Quarantine</a>: ${overview.quarantine}
          </p>
        </div>
        ${secretsTile(stats)}
      </section>`,
  );
}

function outcomesTile(title: string, counts: Counts): Html {
  const refusals = Object.entries(counts)
    .filter(([field]) => field.startsWith('rejected:'))
    .sort(([, a], [, b]) => b - a);
  const rejected = refusals.reduce((sum, [, count]) => sum + count, 0);
  return html`<div class="tile">
    <h2>${title}</h2>
    <dl class="fields">
      ${OUTCOMES.map(
        (outcome) =>
          html`<dt>${outcome}</dt>
            <dd>${counts[outcome] ?? 0}</dd>`,
      )}
      <dt>rejected</dt>
      <dd>
        ${rejected}
        ${
          refusals.length > 0
            ? html`(${refusals.map(([field, count], index) => html`${index > 0 ? ', ' : ''}${field.slice('rejected:'.length)} ${count}`)})`
            : ''
        }
      </dd>
    </dl>
  </div>`;
}

function secretsTile(stats: StatsSnapshot): Html {
  const positions = new Set(
    [...Object.keys(stats.lastDay), ...Object.keys(stats.lastHour)]
      .filter((field) => field.startsWith('secret:'))
      .map((field) => Number(field.slice('secret:'.length))),
  );
  return html`<div class="tile">
    <h2>Secrets that matched</h2>
    ${
      positions.size === 0
        ? html`<p class="empty">No signature checked yet.</p>`
        : html`<table>
              <thead>
                <tr>
                  <th>secret</th>
                  <th>last hour</th>
                  <th>last 24 hours</th>
                </tr>
              </thead>
              <tbody>
                ${[...positions]
                  .sort((a, b) => a - b)
                  .map(
                    (index) =>
                      html`<tr>
                        <td data-label="Secret">
                          #${index + 1}${index === 0 ? ' (the first in WEBHOOK_SECRET)' : ''}
                        </td>
                        <td data-label="Last hour">${stats.lastHour[`secret:${index}`] ?? 0}</td>
                        <td data-label="Last 24 hours">${stats.lastDay[`secret:${index}`] ?? 0}</td>
                      </tr>`,
                  )}
              </tbody>
            </table>
            <p class="meta">A secret that no longer matches in a day can be retired.</p>`
    }
  </div>`;
}

/** Every outcome of a minute added up. */
function total(counts: Counts): number {
  return Object.entries(counts)
    .filter(([field]) => !field.startsWith('secret:'))
    .reduce((sum, [, count]) => sum + count, 0);
}

/**
 * Bars drawn on the server as SVG: numbers only, nothing loaded. Its minutes are written in UTC
 * and marked `data-minute`, which the page's script shows in local time, as every time.
 */
function perMinuteChart(perMinute: StatsSnapshot['perMinute']): Html {
  const totals = perMinute.map(({ counts }) => total(counts));
  const highest = Math.max(1, ...totals);
  const [width, height, bar] = [600, 120, 10];
  return html`<svg
    class="chart"
    viewBox="0 0 ${width} ${height + 16}"
    role="img"
    aria-label="Deliveries per minute over the last hour; at most ${highest} in a minute"
  >
    ${perMinute.map(({ minute }, index) => {
      const barHeight = Math.round((totals[index]! / highest) * height);
      return html`<rect
        x="${index * bar}"
        y="${height - barHeight}"
        width="${bar - 2}"
        height="${barHeight}"
      >
        <title data-minute="${minute}">
          ${minute.slice(11, 16)} UTC: ${plural(totals[index]!, 'delivery', 'deliveries')}
        </title>
      </rect>`;
    })}
    <text x="0" y="${height + 14}" data-minute="${perMinute[0]?.minute}">
      ${perMinute[0]?.minute.slice(11, 16)} UTC
    </text>
    <text x="${width}" y="${height + 14}" text-anchor="end">now</text>
  </svg>`;
}

/**
 * The console's pages, rendered on the server. Every value from a record goes through `html`,
 * which escapes it; links to a record's URLs only for http(s). The pages run no inline script
 * and load nothing from elsewhere (see CONSOLE_CSP).
 */
import type { AttemptRecord } from '../../runs/run-queues.js';
import {
  DELIVERY_FILTERS,
  type DeliveryFilter,
  type DeliveryPage,
  type DeliveryQuery,
  type DeliveryView,
} from '../../runs/delivery-log.js';
import type { RunView } from '../../runs/run-reader.js';
import { html, isolated, isolatedText, safeHref, type Html } from './html.js';
import { plural } from './plural.js';

export const CONSOLE_PATH = '/admin';

/** No inline script or style, nothing from another origin, no framing, forms only to here. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** The console's sections, as its navigation lists them; bull-board's Queues is the last. */
const SECTIONS = [
  ['overview', 'Overview', CONSOLE_PATH],
  ['deliveries', 'Deliveries', `${CONSOLE_PATH}/deliveries`],
  ['groups', 'Groups', `${CONSOLE_PATH}/groups`],
  ['quarantine', 'Quarantine', `${CONSOLE_PATH}/quarantine`],
  ['dead-letter', 'Dead letter', `${CONSOLE_PATH}/dead-letter`],
  ['queues', 'Queues', `${CONSOLE_PATH}/queues`],
] as const;
export type Section = (typeof SECTIONS)[number][0];

/** The console's icon, served as an asset (console-router.ts): no request for /favicon.ico. */
export const FAVICON_PATH = `${CONSOLE_PATH}/assets/favicon.svg`;

/** A page of the console; `section`: the one the navigation marks as the reader's. */
export function layout(title: string, section: Section, body: Html): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · feedback-receiver</title>
        <link rel="icon" href="${FAVICON_PATH}" type="image/svg+xml" />
        <link rel="stylesheet" href="${CONSOLE_PATH}/assets/console.css" />
        <script src="${CONSOLE_PATH}/assets/console.js" defer></script>
      </head>
      <body>
        <header>
          <a class="brand" href="${CONSOLE_PATH}">feedback-receiver</a>
          <nav>
            ${SECTIONS.map(
              ([name, label, href]) =>
                html`<a href="${href}" ${name === section ? html`aria-current="page"` : ''}
                  >${label}</a
                >`,
            )}
          </nav>
        </header>
        <main>${body}</main>
      </body>
    </html> `;
}

/** `actions`: what the operator can do with the result (bulk-pages.ts), under the list. */
export function deliveriesPage(page: DeliveryPage, query: DeliveryQuery, actions?: Html): Html {
  const rows = page.deliveries.map((delivery) =>
    delivery.state === 'quarantined'
      ? html`<tr>
          <td data-label="Received">${time(delivery.receivedAt)}</td>
          <td data-label="Title">
            <a href="${CONSOLE_PATH}/quarantine/${encodeURIComponent(delivery.id)}"
              >${isolated(delivery.deliveryId ?? delivery.id)}</a
            >
          </td>
          <td data-label="Project"></td>
          <td data-label="Rating"></td>
          <td data-label="Handlers">${state('quarantined')} ${isolated(delivery.reason)}</td>
        </tr>`
      : html`<tr>
          <td data-label="Received">${time(delivery.receivedAt)}</td>
          <td data-label="Title">
            <a href="${deliveryHref(delivery.key)}"
              >${isolated(delivery.record.title || delivery.record.id)}</a
            >
          </td>
          <td data-label="Project">${isolated(delivery.record.project_id)}</td>
          <td data-label="Rating">${isolated(delivery.record.rating)}</td>
          <td data-label="Handlers">${state(delivery.state)} ${delivery.runs.map(runBadge)}</td>
        </tr>`,
  );
  const empty =
    query.state === 'quarantined' && page.searched === 0
      ? html`<p class="empty">Nothing is quarantined.</p>`
      : query.q || query.state
        ? html`<p class="empty">No delivery matches among the ${page.searched} kept.</p>`
        : html`<p class="empty">
            No deliveries yet: send one with <code>feedback-receiver send</code>.
          </p>`;
  return layout(
    'Deliveries',
    'deliveries',
    html`<h1>Deliveries</h1>
      <form class="search" method="get" action="${CONSOLE_PATH}/deliveries">
        <input
          type="search"
          name="q"
          value="${query.q ?? ''}"
          placeholder="Feedback id, delivery key, words, reporter email"
          aria-label="Search"
        />
        <select name="state" aria-label="State">
          <option value="">any state</option>
          ${DELIVERY_FILTERS.map(
            (name) =>
              html`<option value="${name}" ${query.state === name ? html`selected` : ''}>
                ${STATE_LABELS[name]}
              </option>`,
          )}
        </select>
        <button type="submit">Search</button>
      </form>
      ${
        page.deliveries.length === 0
          ? empty
          : html`<table class="deliveries">
                <thead>
                  <tr>
                    <th>Received</th>
                    <th>Title</th>
                    <th>Project</th>
                    <th>Rating</th>
                    <th>Handlers</th>
                  </tr>
                </thead>
                <tbody>
                  ${rows}
                </tbody>
              </table>
              ${pager(page, query)} ${actions ?? ''}`
      }`,
  );
}

/** A trace id, as a link into the operator's tracing backend when TRACE_URL_TEMPLATE is set. */
function traceLink(traceId: string, template: string | undefined): Html {
  if (template === undefined) return html`<code>${traceId}</code>`;
  const href = template.replaceAll('{traceId}', encodeURIComponent(traceId));
  return html`<a href="${href}" rel="noreferrer"><code>${traceId}</code></a>`;
}

/** `similar`: its "Similar" section (group-pages.ts), after the timeline. */
export function deliveryPage(
  delivery: DeliveryView,
  done?: Html | string,
  traceUrlTemplate?: string,
  similar?: Html,
): Html {
  const { record } = delivery;
  const context = record.client_context;
  const geo = context?.geo;
  return layout(
    isolatedText(record.title || record.id),
    'deliveries',
    html`<h1>${isolated(record.title || record.id)}</h1>
      ${done ?? ''}
      <p class="meta">
        ${state(delivery.state)} · received ${time(delivery.receivedAt)} ·
        <code>${isolated(delivery.key)}</code>
        ${delivery.traceId ? html` · trace ${traceLink(delivery.traceId, traceUrlTemplate)}` : ''}
      </p>
      ${delivery.reason ? html`<p class="error">${isolated(delivery.reason)}</p>` : ''}
      ${
        delivery.recordKept
          ? ''
          : html`<p class="notice">
              The whole record is no longer kept: its job was removed after
              COMPLETED_JOB_RETENTION_SECONDS. This is what the delivery history keeps of it.
            </p>`
      }
      <section>
        <h2>Timeline</h2>
        ${timeline(delivery)}
      </section>
      ${similar ?? ''}
      <section>
        <h2>Handlers</h2>
        ${
          delivery.runs.length === 0
            ? html`<p class="empty">No handler has run it yet.</p>`
            : html`<ul class="runs">
                  ${delivery.runs.map((run) => runItem(delivery.key, run))}
                </ul>
                ${
                  delivery.runs.filter((run) => run.canRunAgain).length > 1
                    ? html`<p>
                        <a class="button" href="${deliveryHref(delivery.key)}/run-again"
                          >Run every completed handler again…</a
                        >
                      </p>`
                    : ''
                }`
        }
      </section>
      <section>
        <h2>Feedback</h2>
        ${fields([
          ['Id', record.id],
          ['Feedback number', record.feedback_id],
          ['Project', record.project_id],
          ['Description', record.description],
          ['Rating', record.rating],
          ['Priority', record.priority],
          ['Type', record.type],
          ['Status', record.status],
          [
            'Reporter',
            record.reporter ? Object.values(record.reporter).filter(Boolean).join(', ') : undefined,
          ],
          ['Page', link(record.url)],
          ['Screenshot', link(record.screenshot_url)],
          ['Video', link(record.video_url)],
          ['Console log', link(record.console_log_url)],
          [
            'Tags',
            (record.tags ?? [])
              .map((tag) => tag.name)
              .filter(Boolean)
              .join(', '),
          ],
          ['Created', record.created_at ? time(record.created_at) : undefined],
        ])}
      </section>
      ${
        (record.custom_fields ?? []).length > 0
          ? html`<section>
              <h2>Custom fields</h2>
              ${fields((record.custom_fields ?? []).map((field) => [field.name ?? field.id ?? '', field.value]))}
            </section>`
          : ''
      }
      ${
        context
          ? html`<section>
              <h2>Client</h2>
              ${fields([
                ['Browser', [context.browser, context.browser_version].filter(Boolean).join(' ')],
                ['System', [context.os_name, context.os_version].filter(Boolean).join(' ')],
                ['Device', context.device_type],
                [
                  'Screen',
                  context.screen_width
                    ? `${context.screen_width}×${context.screen_height}`
                    : undefined,
                ],
                [
                  'Viewport',
                  context.viewport_width
                    ? `${context.viewport_width}×${context.viewport_height}`
                    : undefined,
                ],
                ['Referrer', link(context.referrer)],
                [
                  'Place',
                  geo
                    ? [geo.city, geo.region, geo.country_code].filter(Boolean).join(', ')
                    : undefined,
                ],
              ])}
            </section>`
          : ''
      }`,
  );
}

/** A delivery, or a quarantine entry, that is not kept (or never was). */
export function notFoundPage(
  what: 'delivery' | 'quarantine entry' | 'bulk action',
  id: string,
): Html {
  return layout(
    'Not found',
    what === 'quarantine entry' ? 'quarantine' : 'deliveries',
    html`<h1>Not found</h1>
      <p class="empty">
        No ${what} <code>${isolated(id)}</code> is kept.
        ${
          what === 'delivery'
            ? 'The delivery history keeps deliveries for DEDUPE_TTL_SECONDS.'
            : what === 'bulk action'
              ? 'A bulk action’s progress is kept for a day.'
              : 'A replayed or deleted entry leaves the quarantine.'
        }
      </p>`,
  );
}

const STATE_LABELS: Record<DeliveryFilter, string> = {
  waiting: 'waiting',
  running: 'running',
  done: 'done',
  failed: 'some handler failed',
  quarantined: 'quarantined',
};

function state(name: DeliveryFilter): Html {
  return html`<span class="state state-${name}">${STATE_LABELS[name]}</span>`;
}

function runBadge(run: Pick<RunView, 'handler' | 'state' | 'reason'>): Html {
  return html`<span class="run run-${run.state}" title="${run.reason ?? run.state}"
    >${run.handler}: ${run.state}</span
  >`;
}

interface TimelineEvent {
  readonly at: string;
  readonly what: Html | string;
}

/**
 * What happened to the delivery, in the order one thing made the next: received, queued, taken,
 * routed, then the runs routing made. The stamps come from more than one clock (the receiver's,
 * the worker's), and routing is stamped when its job ends, after it queued the runs, so a run
 * may start before that stamp: the stamps order events only within the runs.
 */
function timeline(delivery: DeliveryView): Html {
  const { receipt } = delivery;
  const before: TimelineEvent[] = [
    {
      at: delivery.receivedAt,
      what: receipt
        ? `received, signed (${receipt.scheme}) with secret #${receipt.secretIndex + 1}`
        : 'received',
    },
  ];
  if (delivery.queuedAt) before.push({ at: delivery.queuedAt, what: 'queued' });
  if (delivery.takenAt) before.push({ at: delivery.takenAt, what: 'taken by a worker' });
  if (delivery.routedAt) {
    before.push({
      at: delivery.routedAt,
      what: `routed to ${delivery.runs.map((run) => run.handler).join(', ') || 'no handler'}`,
    });
  }
  const waiting = delivery.runs.filter((run) => run.state === 'pending');
  return html`<ol class="timeline">
    ${[...before, ...runEvents(delivery.runs)].map(({ at, what }) => html`<li>${time(at)} ${what}</li>`)}
    ${waiting.map((run) => html`<li>${run.handler}: waiting for its next attempt</li>`)}
  </ol>`;
}

/**
 * The runs' events: each run's in its own order (its attempts as recorded, oldest first), the
 * runs interleaved by time; at one time, by handler name.
 */
function runEvents(runs: readonly RunView[]): TimelineEvent[] {
  const lanes = runs.map((run) => ({ handler: run.handler, events: eventsOfRun(run) }));
  const merged: TimelineEvent[] = [];
  for (;;) {
    let next: (typeof lanes)[number] | undefined;
    for (const lane of lanes) {
      const head = lane.events[0];
      if (head === undefined) continue;
      const best = next?.events[0];
      if (
        best === undefined ||
        head.at < best.at ||
        (head.at === best.at && lane.handler < next!.handler)
      ) {
        next = lane;
      }
    }
    if (next === undefined) return merged;
    merged.push(next.events.shift()!);
  }
}

function eventsOfRun(run: RunView): TimelineEvent[] {
  const events: TimelineEvent[] = run.history.map((attempt) => ({
    at: attempt.startedAt,
    what: attemptLine(run.handler, attempt),
  }));
  // A run made by an older version has no attempt records: how it ended, as BullMQ keeps it.
  if (run.history.length === 0 && run.finishedAt) {
    events.push({
      at: run.finishedAt,
      what: html`${run.handler} ${run.state} after
      ${plural(run.attempts ?? 1, 'attempt')}${run.reason ? html`: <bdi class="error">${run.reason}</bdi>` : ''}`,
    });
  }
  return events;
}

const ATTEMPT_OUTCOMES: Record<AttemptRecord['outcome'], string> = {
  completed: 'completed',
  retrying: 'failed; retried after a backoff',
  delayed: 'rate limited; tried again once allowed, without spending an attempt',
  failed: 'failed for good',
  interrupted: 'interrupted by a shutdown; tried again without spending an attempt',
};

function attemptLine(handler: string, attempt: AttemptRecord): Html {
  return html`${handler}: attempt ${attempt.attempt} of ${attempt.of},
  ${ATTEMPT_OUTCOMES[attempt.outcome]} after ${attempt.ms}
  ms${attempt.error ? html`: <bdi class="error">${attempt.error}</bdi>` : ''}`;
}

function runItem(key: string, run: RunView): Html {
  const triage = triageResult(run.result);
  return html`<li class="run-${run.state}">
    <strong>${run.handler}</strong> ${run.state}
    ${run.attempts ? html`after ${plural(run.attempts, 'attempt')}` : ''}
    ${run.finishedAt ? html`at ${time(run.finishedAt)}` : ''}
    ${run.reason ? html`<p class="error">${isolated(run.reason)}</p>` : ''}
    ${
      run.canRetry
        ? html`<form
            method="post"
            action="${deliveryHref(key)}/runs/${encodeURIComponent(run.handler)}/retry"
          >
            <button type="submit">Retry with all its attempts</button>
          </form>`
        : ''
    }
    ${
      run.canRunAgain
        ? html`<a
            class="button"
            href="${deliveryHref(key)}/run-again?handler=${encodeURIComponent(run.handler)}"
            >Run again…</a
          >`
        : ''
    }
    ${triage ? triageSummary(triage) : ''}
  </li>`;
}

/** Asks before a completed run (or every completed run) of a delivery runs again. */
export function runAgainPage(delivery: DeliveryView, handler: string | undefined): Html {
  const completed = delivery.runs.filter(
    (run) => run.canRunAgain && (handler === undefined || run.handler === handler),
  );
  const title = delivery.record.title || delivery.record.id;
  const back = html`<a href="${deliveryHref(delivery.key)}">Back to the delivery</a>`;
  if (completed.length === 0) {
    return layout(
      'Run again',
      'deliveries',
      html`<h1>Run again</h1>
        <p class="empty">
          ${handler ? html`No completed run of <strong>${handler}</strong>` : 'No completed run'} on
          “${isolated(title)}”: only a run that completed runs again (a failed one is retried).
        </p>
        <p>${back}</p>`,
    );
  }
  return layout(
    'Run again',
    'deliveries',
    html`<h1>Run again?</h1>
      <p>
        ${completed.map((run) => html`<strong>${run.handler}</strong> `)} will run again on
        “${isolated(title)}”, with all of ${completed.length > 1 ? 'their' : 'its'} attempts.
      </p>
      <p class="error">
        Whatever it did the first time may happen twice: a second update, a second message.
      </p>
      <form method="post" action="${deliveryHref(delivery.key)}/run-again">
        ${handler ? html`<input type="hidden" name="handler" value="${handler}" />` : ''}
        <input type="hidden" name="confirm" value="yes" />
        <button type="submit">Run again</button>
        ${back}
      </form>`,
  );
}

type TriageSummary = {
  matched: string[];
  patch: unknown;
  sent: boolean | undefined;
  answer: unknown;
  /** The PATCH of the group's first record, and whether it was sent (not in dry run). */
  first: { recordId: string; patch: unknown; sent: boolean } | undefined;
  /** The variables notified through (never the URLs), and whether they were (not in dry run). */
  notify: { via: string[]; sent: boolean } | undefined;
};

/**
 * What auto-triage returns: the rules that matched, the fields it set, whether it sent them, and
 * the API's answer. `sent` is undefined when the history kept too little of the result to say.
 */
function triageResult(result: unknown): TriageSummary | undefined {
  if (typeof result !== 'object' || result === null || !('matched' in result)) return undefined;
  const { matched, patch, sent, answer, first, firstSent, notify, notified } = result as {
    matched: unknown;
    patch?: unknown;
    sent?: unknown;
    answer?: unknown;
    first?: { recordId?: unknown; patch?: unknown };
    firstSent?: unknown;
    notify?: unknown;
    notified?: unknown;
  };
  if (!Array.isArray(matched)) return undefined;
  const via = Array.isArray(notify)
    ? notify.map((entry) => String((entry as { urlFrom?: unknown }).urlFrom))
    : [];
  return {
    matched: matched.map(String),
    patch,
    sent: typeof sent === 'boolean' ? sent : undefined,
    answer,
    first:
      typeof first === 'object' && first !== null
        ? { recordId: String(first.recordId), patch: first.patch, sent: firstSent === true }
        : undefined,
    notify: via.length > 0 ? { via, sent: Array.isArray(notified) } : undefined,
  };
}

/**
 * What rules that act on the group did: the first record's PATCH and the notifies. Each is
 * "would" until the result says it was sent, as in dry run.
 */
function groupEffects({ first, notify }: TriageSummary): Html | undefined {
  if (!first && !notify) return undefined;
  const patchOfFirst = first
    ? html`<code>PATCH ${isolated(JSON.stringify(first.patch))}</code> to the group's first record
        ${isolated(first.recordId)}`
    : undefined;
  const notifies = notify ? html`a notify through ${notify.via.join(', ')}` : undefined;
  const done = [first?.sent ? patchOfFirst : undefined, notify?.sent ? notifies : undefined];
  const would = [first?.sent ? undefined : patchOfFirst, notify?.sent ? undefined : notifies];
  const list = (items: (Html | undefined)[]) => {
    const shown = items.filter((item) => item !== undefined);
    return shown.length === 2 ? html`${shown[0]} and ${shown[1]}` : shown[0];
  };
  return html`${done.some(Boolean) ? html`Sent ${list(done)}.` : ''}
  ${would.some(Boolean) ? html`Would send ${list(would)} (dry run: not sent).` : ''}`;
}

/**
 * What auto-triage did, in sentences. Auto-triage leaves a PATCH unsent only in dry run, when no
 * rule fired, or when the record already had what the rules set (triage-handler.ts): only the
 * first is "would send".
 */
function triageSummary(summary: TriageSummary): Html {
  const { matched, patch, sent, answer } = summary;
  if (matched.length === 0) return html`<p>No rule fired; nothing was sent.</p>`;
  const fired = html`Rules that fired: ${matched.join(', ')}.`;
  const group = groupEffects(summary) ?? '';
  const fields = typeof patch === 'object' && patch !== null ? Object.keys(patch).length : 0;
  const request = html`<code>PATCH ${isolated(JSON.stringify(patch))}</code>`;
  if (fields === 0 && group) return html`<p>${fired} ${group}</p>`;
  if (fields === 0) {
    return html`<p>${fired} The record already had what they set; nothing was sent.</p>`;
  }
  if (sent === true) {
    return html`<p>
      ${fired} Sent ${request}.
      ${answer === undefined ? '' : html`The API answered with <code>${isolated(JSON.stringify(answer))}</code>.`}
      ${group}
    </p>`;
  }
  if (sent === false)
    return html`<p>${fired} Would send ${request} (dry run: nothing was sent). ${group}</p>`;
  return html`<p>${fired} Its fields: ${request}. ${group}</p>`;
}

function fields(rows: readonly (readonly [string, unknown])[]): Html {
  const shown = rows.filter(([, value]) => value !== undefined && value !== null && value !== '');
  return html`<dl class="fields">
    ${shown.map(
      ([name, value]) =>
        html`<dt>${isolated(name)}</dt>
          <dd>${multiline(value)}</dd>`,
    )}
  </dl>`;
}

/** Text as written, its line breaks kept and its direction its own; anything else as it is. */
function multiline(value: unknown): unknown {
  return typeof value === 'string' ? html`<bdi class="text">${value}</bdi>` : value;
}

/** A link for an http(s) URL; any other text, shown as text. */
function link(url: string | null | undefined): Html | string | undefined {
  const href = safeHref(url);
  if (href) {
    return html`<a href="${href}" rel="noopener noreferrer nofollow">${isolated(url)}</a>`;
  }
  return url ?? undefined;
}

/** A time shown in UTC; the page's script turns it into local time with UTC on hover. */
export function time(iso: string): Html {
  return html`<time datetime="${iso}" title="${iso}">${iso}</time>`;
}

function deliveryHref(key: string): string {
  return `${CONSOLE_PATH}/deliveries/${encodeURIComponent(key)}`;
}

function pager(page: DeliveryPage, query: DeliveryQuery): Html {
  const at = (offset: number) => {
    const params = new URLSearchParams();
    if (query.q) params.set('q', query.q);
    if (query.state) params.set('state', query.state);
    params.set('offset', String(offset));
    params.set('limit', String(query.limit));
    return `${CONSOLE_PATH}/deliveries?${params.toString()}`;
  };
  const last = Math.min(page.total, query.offset + page.deliveries.length);
  return html`<nav class="pager">
    ${query.offset > 0 ? html`<a href="${at(Math.max(0, query.offset - query.limit))}">Newer</a>` : ''}
    <span>${query.offset + 1}–${last} of ${page.total}</span>
    ${last < page.total ? html`<a href="${at(query.offset + query.limit)}">Older</a>` : ''}
  </nav>`;
}

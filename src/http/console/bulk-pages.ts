/**
 * The console's bulk actions on a search result: the offer under a result, the confirmation that
 * says how many runs will be queued, and the progress while they go out in batches.
 */
import type { BulkPlan, BulkProgress, BulkSelection } from '../../runs/bulk-actions.js';
import type { DeliveryQuery } from '../../runs/delivery-log.js';
import { html, isolated, type Html } from './html.js';
import { CONSOLE_PATH, layout } from './pages.js';
import { noun, plural } from './plural.js';

export const BULK_PATH = `${CONSOLE_PATH}/deliveries/bulk`;

/** The fields of a selection, as a form or a link carries them. */
function fieldsOf(selection: BulkSelection & { since?: string | undefined }): [string, string][] {
  const fields: [string, string | undefined][] = [
    ['action', selection.action],
    ['handler', selection.handler],
    ['q', selection.q],
    ['state', selection.state],
    ['since', selection.since],
  ];
  return fields.filter(
    (field): field is [string, string] => field[1] !== undefined && field[1] !== '',
  );
}

/**
 * Under a search result: retry its failed runs (only when it holds some: `failedRuns`), or run a
 * handler on it.
 */
export function bulkOffer(query: DeliveryQuery, failedRuns: boolean): Html {
  if (query.state === 'quarantined' || query.state === 'waiting') return html``;
  const search = { q: query.q, state: query.state };
  const link = (action: BulkSelection['action']) =>
    `${BULK_PATH}?${new URLSearchParams(fieldsOf({ action, ...search })).toString()}`;
  return html`<p class="bulk">
    Act on every delivery this search finds:
    ${failedRuns ? html`<a class="button" href="${link('retry')}">Retry their failed runs…</a>` : ''}
    <a class="button" href="${link('run-again')}">Run a handler on them…</a>
  </p>`;
}

const DESCRIPTIONS = {
  retry: 'Retry every run that failed for good',
  'run-again': 'Run a handler again, or for the first time',
} as const;

/** A run-again without its handler: which handler, and how far back. */
export function bulkChooseHandlerPage(selection: BulkSelection, handlers: readonly string[]): Html {
  return layout(
    'Run a handler on a search result',
    'deliveries',
    html`<h1>Run a handler on a search result</h1>
      ${searchLine(selection)}
      ${
        handlers.length === 0
          ? html`<p class="empty">No worker has started with a handler yet.</p>`
          : html`<form method="get" action="${BULK_PATH}">
              ${hidden(fieldsOf({ ...selection, handler: undefined }))}
              <label
                >Handler
                <select name="handler">
                  ${handlers.map((name) => html`<option value="${name}">${name}</option>`)}
                </select></label
              >
              <label
                >Received in the last
                <input name="since" placeholder="24h" size="6" aria-label="Since"
              /></label>
              <button type="submit">Count the runs</button>
            </form>`
      }`,
  );
}

/** The confirmation: what the action does, and how many runs it queues. */
export function bulkConfirmPage(plan: BulkPlan, since: string | undefined): Html {
  const { selection } = plan;
  const what =
    selection.action === 'retry'
      ? html`<strong>${plan.runs}</strong> failed ${noun(plan.runs, 'run')} will start again, with
          all ${plan.runs === 1 ? 'its' : 'their'} attempts.`
      : html`<strong>${plan.runs}</strong> ${noun(plan.runs, 'run')} of
          <strong>${selection.handler}</strong> will be queued, one per delivery whose whole record
          is still kept.`;
  return layout(
    DESCRIPTIONS[selection.action],
    'deliveries',
    html`<h1>${DESCRIPTIONS[selection.action]}?</h1>
      ${searchLine(selection, since)}
      <p>${plan.deliveries} deliver${plan.deliveries === 1 ? 'y' : 'ies'} found. ${what}</p>
      ${
        selection.action === 'run-again'
          ? html`<p class="error">
              Whatever the handler did the first time may happen twice: a second update, a second
              message.
            </p>`
          : ''
      }
      ${
        plan.runs === 0
          ? html`<p class="empty">Nothing to queue.</p>`
          : html`<form method="post" action="${BULK_PATH}">
              ${hidden(fieldsOf({ ...selection, since }))}
              <input type="hidden" name="confirm" value="yes" />
              <button type="submit">Queue ${plural(plan.runs, 'run')}</button>
            </form>`
      }
      <p><a href="${CONSOLE_PATH}/deliveries">Back to the deliveries</a></p>`,
  );
}

/** The progress of an action; the page reloads itself (console.js) until it is over. */
export function bulkProgressPage(progress: BulkProgress): Html {
  const running = progress.state === 'running';
  return layout(
    'Bulk action',
    'deliveries',
    html`<h1>${DESCRIPTIONS[progress.selection.action]}</h1>
      ${searchLine(progress.selection)}
      <p
        class="${progress.state === 'failed' ? 'error' : 'notice'}"
        role="status"
        ${running ? html`data-reload-after="2"` : ''}
      >
        ${running ? 'Queuing' : progress.state === 'done' ? 'Done' : 'Stopped'}:
        <strong>${progress.queued}</strong> of ${plural(progress.total, 'run')}
        queued${
          progress.skipped > 0 ? html`, ${progress.skipped} skipped (under way or gone)` : ''
        }.
        ${progress.error ? html`${progress.error}` : ''}
      </p>
      <progress max="${progress.total}" value="${progress.queued + progress.skipped}"></progress>
      <p><a href="${CONSOLE_PATH}/deliveries">Back to the deliveries</a></p>`,
  );
}

function searchLine(selection: BulkSelection, since?: string): Html {
  const parts = [
    selection.q ? html`matching “${isolated(selection.q)}”` : html`all deliveries`,
    selection.state ? html`, in state ${selection.state}` : '',
    since ? html`, received in the last ${since}` : '',
  ];
  return html`<p class="meta">Search: ${parts}</p>`;
}

function hidden(fields: readonly [string, string][]): Html[] {
  return fields.map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
  );
}

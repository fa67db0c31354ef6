/**
 * The console's pages for what waits for an operator: the quarantine (bodies that could not be
 * read, shown byte for byte) and the dead letter (runs that failed for good, by handler and
 * cause). Their buttons are POST forms to this site; see console-router.ts.
 */
import type { DeadLetterGroup } from '../../runs/dead-letter.js';
import type { QuarantineEntry, QuarantineSummary } from '../../queue/quarantine.js';
import { html, isolated, type Html } from './html.js';
import { CONSOLE_PATH, layout, time } from './pages.js';
import { plural } from './plural.js';
import { byteLabel, visibleBytes } from './visible-bytes.js';

/** What an action did, as the page after it says (a fixed set: nothing of a request is echoed). */
export const NOTICES = {
  replayed: 'Replayed: the delivery is queued (or was already), and left the quarantine.',
  'still-invalid': 'Still invalid: the entry stays in the quarantine.',
  deleted: 'Deleted from the quarantine.',
  retried: 'Queued again, with all of its attempts.',
  'queued-again': 'Queued to run again, with all of its attempts.',
  'not-completed': 'Nothing run again: only a run that completed runs again; retry a failed one.',
  detached: 'Taken out of its group: it is a group of its own now, and stays one.',
  alone: 'Nothing to do: it is already a group of its own.',
  gone: 'Nothing to do: it is no longer there.',
} as const;
export type Notice = keyof typeof NOTICES;

export function notice(name: Notice | undefined): Html | string {
  return name ? html`<p class="notice" role="status">${NOTICES[name]}</p>` : '';
}

export function quarantinePage(
  entries: readonly QuarantineSummary[],
  total: number,
  done: Notice | undefined,
): Html {
  return layout(
    'Quarantine',
    'quarantine',
    html`<h1>Quarantine</h1>
      ${notice(done)}
      <p class="meta">
        Signed deliveries that could not be read, kept byte for byte until replayed or deleted.
        ${total > entries.length ? html`The newest ${entries.length} of ${total}.` : ''}
      </p>
      ${
        entries.length === 0
          ? html`<p class="empty">The quarantine is empty.</p>`
          : html`<table>
              <thead>
                <tr>
                  <th>Received</th>
                  <th>Reason</th>
                  <th>Issues</th>
                  <th>Size</th>
                </tr>
              </thead>
              <tbody>
                ${entries.map(
                  (entry) =>
                    html`<tr>
                      <td data-label="Received">
                        <a href="${CONSOLE_PATH}/quarantine/${encodeURIComponent(entry.id)}"
                          >${time(entry.receivedAt)}</a
                        >
                      </td>
                      <td data-label="Reason">${isolated(entry.reason)}</td>
                      <td data-label="Issues">${isolated(issuesText(entry.issues))}</td>
                      <td data-label="Size">${plural(entry.size, 'byte')}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }`,
  );
}

export function quarantineEntryPage(entry: QuarantineEntry): Html {
  const action = `${CONSOLE_PATH}/quarantine/${encodeURIComponent(entry.id)}`;
  return layout(
    'Quarantined delivery',
    'quarantine',
    html`<h1>Quarantined delivery</h1>
      <p class="meta">
        ${isolated(entry.reason)} · received ${time(entry.receivedAt)} ·
        <code>${isolated(entry.id)}</code>
      </p>
      <p class="error">${isolated(issuesText(entry.issues))}</p>
      <div class="actions">
        <form method="post" action="${action}/replay">
          <button type="submit">Replay</button>
        </form>
        <form method="post" action="${action}/delete">
          <button type="submit" class="danger">Delete</button>
        </form>
      </div>
      <h2>Body, as received (${entry.body.length} bytes)</h2>
      <pre class="body">
${visibleBytes(entry.body).map((segment) =>
          'text' in segment
            ? segment.text
            : html`<span class="byte" title="not UTF-8 text">${byteLabel(segment.byte)}</span>`,
        )}</pre>
      ${
        Object.keys(entry.headers).length > 0
          ? html`<h2>Headers</h2>
              <dl class="fields">
                ${Object.entries(entry.headers).map(
                  ([name, value]) =>
                    html`<dt>${isolated(name)}</dt>
                      <dd>${isolated(value)}</dd>`,
                )}
              </dl>`
          : ''
      }`,
  );
}

export function deadLetterPage(
  groups: readonly DeadLetterGroup[],
  total: number,
  done: Notice | undefined,
): Html {
  const shown = groups.reduce((sum, group) => sum + group.runs.length, 0);
  return layout(
    'Dead letter',
    'dead-letter',
    html`<h1>Dead letter</h1>
      ${notice(done)}
      <p class="meta">
        Runs that failed for good, kept 30 days.
        ${total > shown ? html`The newest ${shown} of ${total}.` : ''}
      </p>
      ${
        groups.length === 0
          ? html`<p class="empty">No run has failed for good.</p>`
          : groups.map(
              (group) =>
                html`<section class="group">
                  <h2>${group.handler} · ${plural(group.runs.length, 'run')}</h2>
                  <p class="error">${isolated(group.cause)}</p>
                  <form method="post" action="${CONSOLE_PATH}/dead-letter/retry">
                    <input type="hidden" name="handler" value="${group.handler}" />
                    <input type="hidden" name="reason" value="${group.reason}" />
                    <button type="submit">Retry all ${group.runs.length}</button>
                  </form>
                  <ul class="runs">
                    ${group.runs.map(
                      (run) =>
                        html`<li>
                          <a
                            href="${CONSOLE_PATH}/deliveries/${encodeURIComponent(run.deliveryKey)}"
                            >${isolated(run.deliveryKey || run.id)}</a
                          >
                          · ${plural(run.attempts, 'attempt')}
                          ${run.failedAt ? html`· failed ${time(run.failedAt)}` : ''}
                          <form
                            method="post"
                            action="${CONSOLE_PATH}/dead-letter/${encodeURIComponent(run.id)}/retry"
                          >
                            <button type="submit">Retry</button>
                          </form>
                          ${
                            // The cause above says it all when nothing was taken out of it.
                            run.reason === group.cause
                              ? ''
                              : html`<p class="error">${isolated(run.reason)}</p>`
                          }
                        </li>`,
                    )}
                  </ul>
                </section>`,
            )
      }`,
  );
}

function issuesText(issues: QuarantineEntry['issues']): string {
  return issues.map(({ path, message }) => (path ? `${path}: ${message}` : message)).join('; ');
}

/**
 * The console's pages for similar feedback (issue 30): the groups of the last day or week, the
 * fastest-growing first; one group's deliveries; and a delivery's "Similar" section. Titles are
 * written by anonymous visitors, so they reach the page only through `html`, which escapes them;
 * the arrivals chart is SVG drawn on the server from numbers alone.
 */
import type {
  GroupDelivery,
  SimilarGroupDetail,
  SimilarGroupSummary,
} from '../../grouping/similar-groups.js';
import type { ShownSimilarFacts } from '../../similar/similar-facts.js';
import { html, isolated, isolatedText, type Html } from './html.js';
import { CONSOLE_PATH, layout, time } from './pages.js';
import { plural } from './plural.js';

/** The time spans the groups page offers, by their `since` value; the first is the default. */
export const GROUP_SPANS = {
  '24h': { label: 'Last day', ms: 24 * 60 * 60 * 1000 },
  '7d': { label: 'Last week', ms: 7 * 24 * 60 * 60 * 1000 },
} as const;
export type GroupSpan = keyof typeof GROUP_SPANS;

export const GROUPS_PATH = `${CONSOLE_PATH}/groups`;

/** What the delivery page's "Similar" section shows: the facts, or that grouping is off. */
export type SimilarSection =
  | { readonly grouping: 'off' }
  | { readonly grouping: 'on'; readonly facts: ShownSimilarFacts | undefined };

export function groupsPage(
  groups: readonly SimilarGroupSummary[],
  span: GroupSpan,
  project: string | undefined,
): Html {
  const { label } = GROUP_SPANS[span];
  return layout(
    'Groups',
    'groups',
    html`<h1>Groups</h1>
      <p class="meta">
        Similar feedback, grouped as it arrives: the groups of two or more that grew in this span,
        the fastest-growing first.
        ${project ? html`Project <code>${isolated(project)}</code> only.` : ''}
      </p>
      <nav class="spans" aria-label="Span">
        ${Object.entries(GROUP_SPANS).map(
          ([since, { label: spanLabel }]) =>
            html`<a
              href="${spanHref(since, project)}"
              ${since === span ? html`aria-current="page"` : ''}
              >${spanLabel}</a
            >`,
        )}
      </nav>
      ${
        groups.length === 0
          ? html`<p class="empty">
              No group had a delivery in this span (${label.toLowerCase()}). Workers keep groups of
              similar feedback with <code>SIMILAR=on</code>.
            </p>`
          : html`<table class="groups">
              <thead>
                <tr>
                  <th>Size</th>
                  <th>First report</th>
                  <th>Last report</th>
                  <th>Arrivals</th>
                </tr>
              </thead>
              <tbody>
                ${groups.map(
                  (group) =>
                    html`<tr>
                      <td data-label="Size">
                        <a href="${groupHref(group.id)}"
                          >${plural(group.size, 'delivery', 'deliveries')}</a
                        >
                      </td>
                      <td data-label="First report">
                        <a href="${deliveryHref(group.first.key)}"
                          >${isolated(titleOf(group.first))}</a
                        >
                        <br /><span class="meta"
                          >${isolated(group.project)} · ${timeAt(group.first.at)}</span
                        >
                      </td>
                      <td data-label="Last report">${timeAt(group.lastAt)}</td>
                      <td data-label="Arrivals">${arrivalsChart(group.arrivals, label)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }`,
  );
}

export function groupPage(group: SimilarGroupDetail): Html {
  const title = titleOf(group.first);
  return layout(
    `Group: ${isolatedText(title)}`,
    'groups',
    html`<h1>${isolated(title)}</h1>
      <p class="meta">
        A group of ${plural(group.size, 'delivery', 'deliveries')} in project
        <code>${isolated(group.project)}</code>, from ${timeAt(group.first.at)} to
        ${timeAt(group.lastAt)}.
      </p>
      ${arrivalsChart(group.arrivals, 'Last day')}
      <table class="deliveries">
        <thead>
          <tr>
            <th>Arrived</th>
            <th>Title</th>
            <th>Feedback id</th>
          </tr>
        </thead>
        <tbody>
          ${group.deliveries.map(
            (member) =>
              html`<tr>
                <td data-label="Arrived">${timeAt(member.at)}</td>
                <td data-label="Title">
                  <a href="${deliveryHref(member.key)}">${isolated(titleOf(member))}</a>
                  ${member.key === group.first.key ? html`<span class="state">first</span>` : ''}
                </td>
                <td data-label="Feedback id"><code>${isolated(member.recordId)}</code></td>
              </tr>`,
          )}
        </tbody>
      </table>
      ${
        group.deliveries.length < group.size
          ? html`<p class="meta">
              ${group.size - group.deliveries.length} more are no longer kept or not listed.
            </p>`
          : ''
      }
      <p><a href="${GROUPS_PATH}">All groups</a></p>`,
  );
}

/** No reader of groups was given (an embedder's console without one): the groups pages say so. */
export function groupingOffPage(): Html {
  return layout(
    'Groups',
    'groups',
    html`<h1>Groups</h1>
      <p class="empty">
        Grouping is off (<code>SIMILAR=off</code>): deliveries are not compared, and no group is
        kept.
      </p>`,
  );
}

export function groupNotFoundPage(id: string): Html {
  return layout(
    'Not found',
    'groups',
    html`<h1>Not found</h1>
      <p class="empty">
        No group <code>${isolated(id)}</code> is kept. A group lasts as long as the delivery history
        keeps its deliveries (DEDUPE_TTL_SECONDS).
      </p>
      <p><a href="${GROUPS_PATH}">All groups</a></p>`,
  );
}

/** The delivery page's "Similar" section: its group, its best matches, and the way out. */
export function similarSection(key: string, section: SimilarSection): Html {
  if (section.grouping === 'off') {
    return html`<section class="similar">
      <h2>Similar</h2>
      <p class="empty">Grouping is off (<code>SIMILAR=off</code>).</p>
    </section>`;
  }
  const { facts } = section;
  if (!facts) {
    return html`<section class="similar">
      <h2>Similar</h2>
      <p class="empty">
        Not grouped (yet): a worker groups a delivery as it routes it, with <code>SIMILAR=on</code>.
      </p>
    </section>`;
  }
  const { group, matches } = facts;
  const alone = group.size <= 1;
  return html`<section class="similar">
    <h2>Similar</h2>
    <p>
      ${
        alone
          ? html`In a <a href="${groupHref(group.id)}">group of its own</a>.`
          : html`In a
              <a href="${groupHref(group.id)}"
                >group of ${plural(group.size, 'delivery', 'deliveries')}</a
              >${
                group.first.key === key
                  ? html`, the first of them.`
                  : html`, first reported as
                      <a href="${deliveryHref(group.first.key)}"
                        ><code>${isolated(group.first.recordId)}</code></a
                      >.`
              }`
      }
    </p>
    ${
      matches.length === 0
        ? html`<p class="empty">No earlier delivery of its project is like it.</p>`
        : html`<ol class="matches">
            ${matches.map(
              (match) =>
                html`<li>
                  <a href="${deliveryHref(match.key)}"
                    >${isolated(match.title || match.recordId)}</a
                  >
                  <span class="score" title="similarity, 0 to 1">${match.score.toFixed(2)}</span>
                </li>`,
            )}
          </ol>`
    }
    ${
      alone
        ? ''
        : html`<form method="post" action="${deliveryHref(key)}/detach">
            <button type="submit">Take out of its group</button>
            <span class="meta">It becomes a group of its own, and stays one.</span>
          </form>`
    }
  </section>`;
}

/**
 * Arrivals per bucket as bars drawn on the server: numbers only, nothing loaded. The label and
 * the bars' titles are its text alternative.
 */
export function arrivalsChart(arrivals: readonly number[], span: string): Html {
  const highest = Math.max(1, ...arrivals);
  const total = arrivals.reduce((sum, count) => sum + count, 0);
  const [height, bar] = [24, 6];
  const width = Math.max(1, arrivals.length) * bar;
  return html`<svg
    class="chart arrivals"
    viewBox="0 0 ${width} ${height}"
    width="${width}"
    height="${height}"
    role="img"
    aria-label="${span}: ${plural(total, 'arrival')}, at most ${highest} in one of ${arrivals.length} intervals"
  >
    ${arrivals.map((count, index) => {
      const barHeight = count === 0 ? 0 : Math.max(1, Math.round((count / highest) * height));
      return html`<rect
        x="${index * bar}"
        y="${height - barHeight}"
        width="${bar - 1}"
        height="${barHeight}"
      >
        <title>${plural(count, 'arrival')}</title>
      </rect>`;
    })}
  </svg>`;
}

function titleOf(member: Pick<GroupDelivery, 'title' | 'recordId'>): string {
  return member.title || member.recordId;
}

function timeAt(ms: number): Html {
  return time(new Date(ms).toISOString());
}

function spanHref(since: string, project: string | undefined): string {
  const params = new URLSearchParams({ since });
  if (project) params.set('project', project);
  return `${GROUPS_PATH}?${params.toString()}`;
}

export function groupHref(id: string): string {
  return `${GROUPS_PATH}/${encodeURIComponent(id)}`;
}

function deliveryHref(key: string): string {
  return `${CONSOLE_PATH}/deliveries/${encodeURIComponent(key)}`;
}

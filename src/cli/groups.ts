/**
 * `feedback-receiver groups`: the largest groups of similar feedback, for an operator at a
 * terminal. Titles are written by anonymous visitors, so each is cut to its line and made
 * terminal-safe before it is printed.
 */
import type { SimilarGroupSummary } from '../grouping/similar-groups.js';
import { GROUPS_WEIGHED_PER_LISTED, MOST_LISTED_GROUPS } from '../grouping/similar-groups.js';
import { readSince } from '../runs/since-span.js';
import { LIMIT_OPTION, parseLimit, UsageError, type Command } from './command.js';
import { plural } from './plural.js';
import { withQueues } from './redis-for-cli.js';
import { terminalText } from './terminal-text.js';

/** A first report's title is cut to this many characters (as a reader counts them) on its line. */
const TITLE_WIDTH = 60;

/** Most groups the reader weighs for the CLI: the largest are chosen among these. */
export const MOST_WEIGHED = MOST_LISTED_GROUPS * GROUPS_WEIGHED_PER_LISTED;

export const groupsCommand: Command = {
  name: 'groups',
  summary: 'list the largest groups of similar feedback',
  help: `Usage: feedback-receiver groups [--since 24h] [--project <id>] [--limit 50]

Lists the largest groups of similar feedback of two or more deliveries that
had a delivery in the span (--since takes 30m, 24h or 7d), largest first: size,
last arrival, project, and the first report's title. A span of more than
${MOST_WEIGHED} groups: the largest of its ${MOST_WEIGHED} most recently active, as its last line
says. --project shows one project's groups only. It lists what Redis holds,
whatever SIMILAR says here: workers keep the groups (SIMILAR=on). The console's
Groups page (/admin/groups) shows them with their arrivals over time.`,
  options: {
    since: { type: 'string', default: '24h' },
    project: { type: 'string' },
    ...LIMIT_OPTION,
  },
  async run(values) {
    const limit = parseLimit(values);
    const since = String(values.since);
    const span = readSince(since);
    if ('problem' in span) {
      throw new UsageError(`--since: ${span.problem}; see feedback-receiver groups --help`);
    }
    const project = typeof values.project === 'string' ? values.project : undefined;
    await withQueues(async ({ similarGroups }) => {
      const query = { sinceMs: Date.now() - span.ms, project };
      const [found, total] = await Promise.all([
        similarGroups.list({ ...query, limit: MOST_LISTED_GROUPS, order: 'largest' }),
        similarGroups.count(query),
      ]);
      if (found.length === 0) {
        const lastAt = await similarGroups.lastGroupedAt(project);
        console.log(noGroupsLine({ since, sinceMs: query.sinceMs, project, lastAt }));
        return;
      }
      for (const line of groupLines(found, limit)) console.log(line);
      console.log(`\n${groupsFooter(Math.min(limit, found.length), total, since)}`);
    });
  },
};

/**
 * What the listing shows, said exactly: the largest of the window's groups, chosen among the
 * MOST_WEIGHED most recently active when it holds more.
 */
export function groupsFooter(shown: number, total: number, since: string): string {
  const among =
    total > MOST_WEIGHED ? `, the largest of the ${MOST_WEIGHED} most recently active` : '';
  return `${plural(shown, 'group')} of ${total} with a delivery in the last ${since}, largest first${among}.`;
}

/**
 * Why the listing is empty, as far as Redis can tell: grouping holds nothing (no worker has
 * SIMILAR=on, or it points at another Redis or QUEUE_PREFIX), its last delivery came before the
 * span, or the span's deliveries are each like no other (a group of one is not listed).
 */
export function noGroupsLine(empty: {
  since: string;
  sinceMs: number;
  project: string | undefined;
  /** SimilarGroups.lastGroupedAt: undefined when grouping holds no delivery. */
  lastAt: number | undefined;
}): string {
  const { since, sinceMs, project, lastAt } = empty;
  const of = project === undefined ? '' : ` of project ${terminalText(project)}`;
  if (lastAt === undefined) {
    return `No groups: grouping holds no delivery${of} in this Redis. Workers keep groups of similar feedback with SIMILAR=on, in their REDIS_URL and QUEUE_PREFIX.`;
  }
  const last = new Date(lastAt).toISOString();
  if (lastAt <= sinceMs) {
    return `No group had a delivery in the last ${since}: grouping's last delivery${of} came at ${last}; a longer --since shows the groups before it.`;
  }
  return `No group of two or more had a delivery in the last ${since}: the deliveries${of} grouped in it (the last at ${last}) are each like no other.`;
}

/** The listing: a header, then a line per group, largest first, at most `limit`. */
export function groupLines(groups: readonly SimilarGroupSummary[], limit: number): string[] {
  const largest = [...groups]
    .sort((a, b) => b.size - a.size || b.lastAt - a.lastAt)
    .slice(0, limit);
  const rows = largest.map((group) => [
    String(group.size),
    new Date(group.lastAt).toISOString(),
    terminalText(group.project),
    terminalText(cut(group.first.title || group.first.recordId, TITLE_WIDTH)),
  ]);
  const header = ['Size', 'Last arrival', 'Project', 'First report'];
  const widths = header.map((name, column) =>
    Math.max(name.length, ...rows.map((row) => row[column]!.length)),
  );
  return [header, ...rows].map((row) =>
    row
      .map((cell, column) =>
        column === 0
          ? cell.padStart(widths[0]!)
          : column === row.length - 1
            ? cell
            : cell.padEnd(widths[column]!),
      )
      .join('  '),
  );
}

/** At most `width` characters as a reader counts them (an emoji is one), with … when cut. */
function cut(text: string, width: number): string {
  const characters = [...new Intl.Segmenter().segment(text)].map(({ segment }) => segment);
  return characters.length <= width ? text : `${characters.slice(0, width - 1).join('')}…`;
}

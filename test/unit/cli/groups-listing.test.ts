/**
 * `feedback-receiver groups`' listing (issue 30): the largest groups first, each on one line, its
 * title cut and made safe for a terminal whatever a visitor wrote.
 */
import { describe, expect, it } from 'vitest';
import { groupLines, groupsFooter, MOST_WEIGHED, noGroupsLine } from '../../../src/cli/groups.js';
import type { SimilarGroupSummary } from '../../../src/grouping/similar-groups.js';

const at = Date.parse('2026-11-26T09:00:00.000Z');

function group(size: number, title: string, project = 'prj_shop'): SimilarGroupSummary {
  const first = { key: `feedback.created:fb_${size}`, recordId: `fb_${size}`, title, at };
  return { id: `g${size}`, project, size, first, lastAt: at + size, arrivals: [] };
}

describe('the groups listing', () => {
  it('puts the largest first, at most the limit, with size, last arrival and project', () => {
    const lines = groupLines([group(2, 'two'), group(9, 'nine'), group(5, 'five')], 2);
    expect(lines).toEqual([
      'Size  Last arrival              Project   First report',
      '   9  2026-11-26T09:00:00.009Z  prj_shop  nine',
      '   5  2026-11-26T09:00:00.005Z  prj_shop  five',
    ]);
  });

  it('shows escape sequences, bidi overrides and line breaks as visible escapes', () => {
    const [, line] = groupLines(
      [group(3, 'red\u001b[31m\nnext \u202eexe.txt', 'prj_\u001b]0;owned\u0007')],
      10,
    );
    expect(line).toBe(
      '   3  2026-11-26T09:00:00.003Z  prj_\\x1b]0;owned\\x07  red\\x1b[31m\\nnext \\u202eexe.txt',
    );
    expect([...line!].filter((c) => c.codePointAt(0)! < 0x20 || c === '\u202e')).toEqual([]);
  });

  it('cuts a long title to 60 characters as a reader counts them, emoji and CJK whole', () => {
    const [, cjk] = groupLines([group(1, '支付'.repeat(40))], 1);
    expect(cjk).toContain(`${'支付'.repeat(29)}支…`);
    const [, emoji] = groupLines([group(1, '👩‍👩‍👧'.repeat(70))], 1);
    expect(emoji).toContain(`${'👩‍👩‍👧'.repeat(59)}…`);
    const [, short] = groupLines([group(1, '🙃 cant pay!!')], 1);
    expect(short).toMatch(/ 🙃 cant pay!!$/);
  });

  it('names a record by its id when its title is empty', () => {
    expect(groupLines([group(4, '')], 1)[1]).toMatch(/ fb_4$/);
  });
});

describe('the line that says why no group is listed', () => {
  const sinceMs = Date.parse('2026-11-28T12:00:00Z');

  it('says grouping holds nothing, and where workers keep it, when it holds no delivery', () => {
    expect(noGroupsLine({ since: '24h', sinceMs, project: undefined, lastAt: undefined })).toBe(
      'No groups: grouping holds no delivery in this Redis. Workers keep groups of similar feedback with SIMILAR=on, in their REDIS_URL and QUEUE_PREFIX.',
    );
    expect(
      noGroupsLine({ since: '24h', sinceMs, project: 'prj_\u001b[2J', lastAt: undefined }),
    ).toContain('grouping holds no delivery of project prj_\\x1b[2J in this Redis');
  });

  it('says when the last delivery came, when it came before the span', () => {
    expect(
      noGroupsLine({ since: '1h', sinceMs, project: 'prj_shop', lastAt: sinceMs - 60_000 }),
    ).toBe(
      "No group had a delivery in the last 1h: grouping's last delivery of project prj_shop came at 2026-11-28T11:59:00.000Z; a longer --since shows the groups before it.",
    );
  });

  it("says the span's deliveries are each like no other, when the last came in it", () => {
    expect(
      noGroupsLine({ since: '1h', sinceMs, project: undefined, lastAt: sinceMs + 60_000 }),
    ).toBe(
      'No group of two or more had a delivery in the last 1h: the deliveries grouped in it (the last at 2026-11-28T12:01:00.000Z) are each like no other.',
    );
  });
});

describe("the groups listing's last line", () => {
  it('says how many groups the span holds, and when the largest are of the most recently active', () => {
    expect(groupsFooter(1, 1, '24h')).toBe(
      '1 group of 1 with a delivery in the last 24h, largest first.',
    );
    expect(groupsFooter(50, MOST_WEIGHED + 1, '7d')).toBe(
      `50 groups of ${MOST_WEIGHED + 1} with a delivery in the last 7d, largest first, the largest of the ${MOST_WEIGHED} most recently active.`,
    );
  });
});

/**
 * The pages of similar feedback's groups (issue 30, item 5): titles written to attack the page, or
 * in any script, reach it as text; the arrivals chart is bars with a text alternative.
 */
import { describe, expect, it } from 'vitest';
import type { SimilarGroupDetail } from '../../../src/grouping/similar-groups.js';
import {
  arrivalsChart,
  groupPage,
  groupsPage,
  similarSection,
} from '../../../src/http/console/group-pages.js';
import type { ShownSimilarFacts } from '../../../src/similar/similar-facts.js';

const SCRIPT = '<script>window.pwned=1</script><img src=x onerror="alert(1)">';
const HOSTILE_TITLES = [
  SCRIPT,
  '"><svg onload=alert(2)>',
  'الدفع لا يعمل \u202eexe.txt',
  '支付按钮没有反应',
  'カートが空になる',
  'Pay button 🙃🔥 stays grey',
  'bell\u0007 escape\u001b[31m null\u0000',
];

const at = Date.parse('2026-11-26T09:00:00.000Z');

function groupTitled(title: string): SimilarGroupDetail {
  const first = { key: `feedback.created:fb_${title.length}`, recordId: 'fb_1', title, at };
  return {
    id: `prj_shop.${first.key}`,
    project: 'prj_<b>shop</b>',
    size: 3,
    first,
    lastAt: at + 60_000,
    arrivals: [0, 2, 0, 1],
    deliveries: [{ ...first, key: 'feedback.created:fb_2', at: at + 60_000 }, first],
  };
}

/** The markup with every element and attribute of the page's own taken out: what is left is text. */
function textOf(markup: string): string {
  return markup.replace(/<[^>]*>/g, '');
}

describe('the groups page', () => {
  it.each(HOSTILE_TITLES)('shows the first report’s title %j as text', (title) => {
    const markup = groupsPage([groupTitled(title)], '24h', undefined).markup;
    expect(markup).not.toContain('<script>window');
    expect(markup).not.toMatch(/<(img|svg) [^>]*on(error|load)=/);
    expect(markup).not.toContain('<b>shop</b>');
    const escaped = title
      .replaceAll('&', '&amp;')
      .replaceAll('<', '&lt;')
      .replaceAll('>', '&gt;')
      .replaceAll('"', '&quot;')
      // NUL, which a browser drops from text unseen, as the replacement character.
      .replaceAll('\u0000', '\uFFFD');
    expect(markup).toContain(`<bdi>${escaped}</bdi>`);
  });

  it('links the first report to its delivery page and the size to the group page', () => {
    const markup = groupsPage([groupTitled('Pay button')], '24h', undefined).markup;
    expect(markup).toContain('href="/admin/deliveries/feedback.created%3Afb_10"');
    expect(markup).toContain('href="/admin/groups/prj_shop.feedback.created%3Afb_10"');
    expect(textOf(markup)).toContain('3 deliveries');
  });

  it('marks the span shown, and keeps the project in the other span’s link', () => {
    const markup = groupsPage([], '7d', 'prj_a&b').markup;
    expect(markup).toMatch(
      /href="\/admin\/groups\?since=7d&amp;project=prj_a%26b"\s+aria-current="page"/,
    );
    expect(markup).toContain('href="/admin/groups?since=24h&amp;project=prj_a%26b"');
    expect(markup).toContain('No group had a delivery in this span');
  });
});

describe('the arrivals chart', () => {
  it('draws one bar per bucket, as tall as its count, with a text alternative', () => {
    const markup = arrivalsChart([0, 4, 2, 1], 'Last day').markup;
    const heights = [...markup.matchAll(/<rect[^>]* height="(\d+)"/g)].map((match) => match[1]);
    expect(heights).toEqual(['0', '24', '12', '6']);
    expect(markup).toContain('role="img"');
    expect(markup).toContain('aria-label="Last day: 7 arrivals, at most 4 in one of 4 intervals"');
  });
});

describe('a group’s page', () => {
  it.each(HOSTILE_TITLES)('lists deliveries titled %j as text, linked', (title) => {
    const markup = groupPage(groupTitled(title)).markup;
    expect(markup).not.toContain('<script>window');
    expect(markup).not.toMatch(/<(img|svg) [^>]*on(error|load)=/);
    expect(markup).toContain('href="/admin/deliveries/feedback.created%3Afb_2"');
  });
});

describe('a delivery’s Similar section', () => {
  const facts: ShownSimilarFacts = {
    group: {
      id: 'prj_shop.g1',
      size: 4,
      first: { key: 'feedback.created:fb_1', recordId: 'fb_1' },
    },
    matches: HOSTILE_TITLES.map((title, index) => ({
      key: `feedback.created:fb_m${index}`,
      recordId: `fb_m${index}`,
      title,
      score: 0.9 - index / 10,
    })),
    crossed: [],
  };

  it('shows its group, its matches with their scores as text, and the way out', () => {
    const markup = similarSection('feedback.created:fb_9', { grouping: 'on', facts }).markup;
    expect(markup).not.toContain('<script>window');
    expect(markup).not.toMatch(/<(img|svg) [^>]*on(error|load)=/);
    expect(textOf(markup)).toContain('group of 4 deliveries');
    expect(markup).toContain('href="/admin/groups/prj_shop.g1"');
    expect(markup).toContain('href="/admin/deliveries/feedback.created%3Afb_m0"');
    expect(textOf(markup)).toContain('0.90');
    expect(markup).toContain('action="/admin/deliveries/feedback.created%3Afb_9/detach"');
  });

  it('offers no way out to a delivery that is a group of its own', () => {
    const alone = { ...facts, group: { ...facts.group, size: 1 } };
    const markup = similarSection('feedback.created:fb_1', { grouping: 'on', facts: alone }).markup;
    expect(markup).toContain('group of its own');
    expect(markup).not.toContain('/detach');
  });

  it('says grouping is off when it is', () => {
    const markup = similarSection('feedback.created:fb_1', { grouping: 'off' }).markup;
    expect(textOf(markup)).toContain('Grouping is off');
  });
});

import { describe, expect, it } from 'vitest';
import {
  encodeArrival,
  encodeEntry,
  encodeFirst,
  encodeGroup,
  encodeMatches,
  readStored,
  type StoredGrouping,
} from '../../../src/grouping/stored-grouping.js';

/** What the join script writes (similar-join.lua), from its parts. */
function stored(grouping: StoredGrouping): string {
  return [
    encodeEntry(grouping.e),
    encodeGroup(grouping.e, grouping.g),
    grouping.s,
    encodeArrival(grouping.e, grouping.t),
    grouping.c.map(([atLeast, within]) => `${atLeast}:${within}`).join(','),
    encodeMatches(grouping.e, grouping.m),
    encodeFirst(grouping.f),
  ].join('|');
}

describe('a stored grouping', () => {
  it('reads back what was stored, odd record ids and keys included', () => {
    const groupings: StoredGrouping[] = [
      {
        e: '1764150000000-3',
        g: '1764140000000-0',
        s: 7,
        t: 1764150000123,
        c: [
          [5, 3_600_000],
          [2, 60_000],
        ],
        m: [
          ['1764149999000-0', 830],
          ['1764150000000-1', 1000],
          ['1700000000000-12', 0],
        ],
        f: ['feedback.created:fb_1', 'fb_1'],
      },
      {
        e: '5-0',
        g: '5-0.d',
        s: 1,
        t: 5,
        c: [],
        m: [],
        f: ['msg|1:ключ 🙈', 'id|with:bars ключ'],
      },
    ];
    for (const grouping of groupings) {
      expect(readStored(stored(grouping), 'any key')).toEqual(grouping);
    }
  });

  it('keeps the entry id in base 36 and the group relative to it, and reads the full form before', () => {
    expect(encodeEntry('1764150000000-0')).toBe('miftczuo');
    expect(encodeEntry('1764150000000-37')).toBe('miftczuo.11');
    expect(encodeGroup('1764150000000-37', '1764150000000-37')).toBe('');
    expect(encodeGroup('1764150000000-37', '1764149999000-0')).toBe('rs');
    expect(encodeGroup('1764150000000-37', '1764146400000-2.d')).toBe('255s0.2_d');
    expect(encodeGroup('1764150000000-0', '1764150000000-0.d')).toBe('0_d');
    expect(encodeGroup('1764150000000-0', '1764149999000-0.d12')).toBe('rs_d12');
    // Never so (a group's first entered before), but read back all the same.
    expect(encodeGroup('1764150000000-0', '1764150000010-0')).toBe('-a');
    const line = (entry: string, group: string) => `${entry}|${group}|2|0|||4:fb_1`;
    for (const [entry, group] of [
      ['miftczuo.11', '255s0.2_d'],
      ['1764150000000-37', '1764146400000-2.d'],
    ] as const) {
      expect(readStored(line(entry, group), 'feedback.created:fb_2')).toMatchObject({
        e: '1764150000000-37',
        g: '1764146400000-2.d',
      });
    }
    expect(readStored(line('miftczuo', '-a'), 'x')!.g).toBe('1764150000010-0');
    expect(readStored(line('miftczuo', ''), 'x')!.g).toBe('1764150000000-0');
    expect(readStored(line('miftczuo', 'rs_d12'), 'x')!.g).toBe('1764149999000-0.d12');
  });

  it('reads an empty group as the entry id (a delivery that started its group)', () => {
    expect(readStored('5-0||1|5|||4:fb_1', 'feedback.created:fb_1')).toMatchObject({
      e: '5-0',
      g: '5-0',
    });
  });

  it('keeps the arrival as ms before the entry id, and reads the time a line before kept', () => {
    expect(encodeArrival('1764150000500-2', 1764150000123)).toBe('377');
    expect(encodeArrival('1764150000000-0', 1764150000123)).toBe('-123');
    const line = (arrival: string) => `1764150000500-2||1|${arrival}|||4:fb_1`;
    for (const arrival of ['377', '1764150000123']) {
      expect(readStored(line(arrival), 'feedback.created:fb_1')!.t).toBe(1764150000123);
    }
    expect(readStored(line('-1000'), 'feedback.created:fb_1')!.t).toBe(1764150001500);
  });

  it('reads an empty first as the delivery itself, whose key is made of its record id', () => {
    expect(readStored('5-0||1|0|||', 'feedback.created:fb_1|x')!.f).toEqual([
      'feedback.created:fb_1|x',
      'fb_1|x',
    ]);
    // Only a delivery that started its group, and only with such a key.
    expect(readStored('5-0|4-0|2|0|||', 'feedback.created:fb_1')).toBeUndefined();
    expect(readStored('5-0||1|0|||', 'msg_1')).toBeUndefined();
  });

  it('keeps each match as its score in two digits and its distance back, and reads the form before', () => {
    const own = '1764150000000-3';
    const matches: [string, number][] = [
      ['1764149999000-0', 830],
      ['1764150000000-1', 1000],
      ['1764149999964-0', 5],
    ];
    expect(encodeMatches(own, matches)).toBe('n2rs,rs0.1,0510');
    const line = (text: string) => `${own}||1|0||${text}|`;
    expect(readStored(line('n2rs,rs0.1,0510'), 'feedback.created:fb_1')!.m).toEqual(matches);
    expect(readStored(line('rs:n2,0.1:rs,10:05'), 'feedback.created:fb_1')!.m).toEqual(matches);
  });

  it('keeps a key made of the record id as the record id alone', () => {
    expect(encodeFirst(['feedback.created:fb_1', 'fb_1'])).toBe('4:fb_1');
    expect(encodeFirst(['msg_1', 'fb_1'])).toBe('4:fb_1msg_1');
  });

  it('reads nothing from a pending delivery or a value of another shape', () => {
    for (const value of [null, undefined, 'pending:1-0', '{"e":"1-0"}', '1-0|1-0|x|1|||0:']) {
      expect(readStored(value, 'feedback.created:fb_1')).toBeUndefined();
    }
  });
});

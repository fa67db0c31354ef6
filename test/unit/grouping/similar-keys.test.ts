import { describe, expect, it } from 'vitest';
import {
  firstEntryOf,
  groupIdOf,
  keyOfLineField,
  lineField,
  projectKeys,
  readGroupId,
} from '../../../src/grouping/similar-keys.js';

describe('grouping keys and group ids', () => {
  it('reads back the project and group a public group id is made of, odd characters included', () => {
    for (const [project, group] of [
      ['prj_shop', '1764150000000-0'],
      ['', '1764150000000-12'],
      ['{tag}', '1764150000000-3.d'],
      ['prj_shop', '1764150000000-3.d2'],
      ['prj_shop', '1764150000000-3.d10'],
      ['ключ/🙈 :.', '0-1'],
    ] as const) {
      const id = groupIdOf(project, group);
      expect(id).toMatch(/^[A-Za-z0-9_-]*\.[0-9-]+(\.d\d*)?$/);
      expect(readGroupId(id)).toEqual({ project, group });
    }
  });

  it('reads no group from an id of none', () => {
    for (const id of [
      ...['', 'abc', 'a.b.c', 'a b.c', '../x', 'a.1-0.e', 'a.1-0.d.d', 'a.b-0'],
      // A group detached again is .d2, .d3, ...: never .d1, .d0 or a leading zero.
      ...['a.1-0.d1', 'a.1-0.d0', 'a.1-0.d02', 'a.1-0.d-2'],
    ]) {
      expect(readGroupId(id)).toBeUndefined();
    }
  });

  it("finds a group's first entry in its id, detached or not", () => {
    for (const group of ['1-0', '1-0.d', '1-0.d2', '1-0.d12'])
      expect(firstEntryOf(group)).toBe('1-0');
  });

  it('puts every key of a project under one hash tag, braces in its id kept out of it', () => {
    const keys = projectKeys('fr', 'p{1}');
    const tags = [keys.docs, keys.of, keys.groups, keys.detaches].map(
      (key) => /\{([^}]*)\}/.exec(key)![1],
    );
    expect(new Set(tags).size).toBe(1);
    expect(tags[0]).not.toContain('{');
  });
});

describe('a line field', () => {
  it('is the record id alone for a key made of it, and a colon and the key for any other', () => {
    expect(lineField('feedback.created:fb_1')).toBe('fb_1');
    expect(lineField('msg_1')).toBe(':msg_1');
    // Never the same field for two keys: a record id that starts with a colon takes the key.
    expect(lineField('feedback.created::x')).toBe(':feedback.created::x');
    expect(lineField(':x')).toBe('::x');
    const keys = [
      'feedback.created:fb_1',
      'fb_1',
      'msg|1:ключ 🙈',
      'feedback.created::x',
      ':x',
      'feedback.created:',
    ];
    const fields = keys.map(lineField);
    expect(new Set(fields).size).toBe(keys.length);
    expect(fields.map(keyOfLineField)).toEqual(keys);
  });
});

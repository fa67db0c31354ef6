import { describe, expect, it } from 'vitest';
import { groupIdOf, projectKeys, readGroupId } from '../../../src/grouping/similar-keys.js';

describe('grouping keys and group ids', () => {
  it('reads back the project and first key a group id is made of, odd characters included', () => {
    for (const [project, key] of [
      ['prj_shop', 'feedback.created:fb_1'],
      ['', 'msg_1'],
      ['{tag}', 'ключ/🙈 :.'],
    ] as const) {
      const id = groupIdOf(project, key);
      expect(id).toMatch(/^[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/);
      expect(readGroupId(id)).toEqual({ project, firstKey: key });
      expect(readGroupId(`${id}.d`)).toEqual({ project, firstKey: key });
    }
  });

  it('reads no group from an id of none', () => {
    for (const id of ['', 'abc', 'a.b.c', 'a b.c', '../x', 'a.b.e']) {
      expect(readGroupId(id)).toBeUndefined();
    }
  });

  it('puts every key of a project under one hash tag, braces in its id kept out of it', () => {
    const keys = projectKeys('fr', 'p{1}');
    const tags = [keys.docs, keys.of, keys.groups].map((key) => /\{([^}]*)\}/.exec(key)![1]);
    expect(new Set(tags).size).toBe(1);
    expect(tags[0]).not.toContain('{');
  });
});

/**
 * Our Lua scripts live in .lua files beside the module that loads them, as BullMQ keeps its own.
 * tsc does not copy them: `npm run build` does (its build:lua step), and the package and the image
 * ship dist/ as it is. This runs after a build (`npm test` builds first).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const scripts = readdirSync(new URL('src', root), { recursive: true, encoding: 'utf8' }).filter(
  (file) => file.endsWith('.lua'),
);

describe('Lua scripts', () => {
  it('are kept in .lua files under src', () => {
    expect(scripts).toEqual(
      expect.arrayContaining(['history/write-history.lua', 'queue/acquire-rate-limit-slot.lua']),
    );
  });

  it.each(scripts)('%s is in dist as it is in src, after a build', (file) => {
    const built = readFileSync(new URL(`dist/${file}`, root), 'utf8');
    expect(built).toBe(readFileSync(new URL(`src/${file}`, root), 'utf8'));
  });
});

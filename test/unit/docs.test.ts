/**
 * The README is one screen; the reference lives in docs/, one page per subject. These checks keep
 * the pages in step with the code (every variable, every command and option) and with each other
 * (every relative link and #anchor leads somewhere).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENVIRONMENT_VARIABLES } from '../../src/config.js';
import type { Command } from '../../src/cli/command.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const pages = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Every command the CLI registers: the exports of src/cli/*.ts shaped as a Command. */
async function commands(): Promise<Command[]> {
  const found: Command[] = [];
  for (const file of readdirSync(join(ROOT, 'src/cli')).filter((name) => name.endsWith('.ts'))) {
    if (file === 'main.ts') continue; // runs the CLI when imported
    const module = (await import(join(ROOT, 'src/cli', file))) as Record<string, unknown>;
    for (const value of Object.values(module)) {
      const candidate = value as Partial<Command> | null;
      if (typeof candidate?.name === 'string' && typeof candidate.help === 'string')
        found.push(candidate as Command);
    }
  }
  return found;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');

const anchorsIn = (path: string) =>
  new Set([...read(path).matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) => anchorOf(heading!)));

describe('the documentation', () => {
  it('docs/configuration.md names every environment variable the code reads', () => {
    const page = read('docs/configuration.md');
    const missing = ENVIRONMENT_VARIABLES.filter((name) => !page.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it('docs/cli.md has a row for every command, naming each of its options', async () => {
    const page = read('docs/cli.md');
    const all = await commands();
    expect(all.map((command) => command.name)).toContain('healthcheck');
    for (const command of all) {
      const rows = page
        .split('\n')
        .filter((line) => line.startsWith(`| \`${command.name}`))
        .join('\n');
      expect(rows, `a row for ${command.name}`).not.toBe('');
      for (const option of Object.keys(command.options ?? {}))
        expect(rows, `${command.name} --${option}`).toContain(`--${option}`);
    }
    expect(page).toContain('--help');
    expect(page).toContain('--version');
  });

  it.each(pages)('%s links only to files and headings that exist', (page) => {
    const broken: string[] = [];
    for (const [, target] of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue; // http(s), mailto
      const [path, anchor] = target!.split('#');
      const file = path ? relative(ROOT, join(ROOT, dirname(page), path)) : page;
      if (!existsSync(join(ROOT, file))) {
        broken.push(target!);
        continue;
      }
      if (anchor !== undefined && !anchorsIn(file).has(anchor)) broken.push(target!);
    }
    expect(broken).toEqual([]);
  });
});

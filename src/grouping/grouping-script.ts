import { readFileSync } from 'node:fs';

const LINE_FIELDS = readFileSync(new URL('./line-fields.lua', import.meta.url), 'utf8');

/**
 * A grouping script's source (`similar-enter.lua`, ...), after the functions that find a
 * delivery's line (`line-fields.lua`), which every grouping script reads the same way.
 */
export function groupingScript(file: string): string {
  return `${LINE_FIELDS}\n${readFileSync(new URL(`./${file}`, import.meta.url), 'utf8')}`;
}

/**
 * The shared duplicate-report data (/work/shared/data/similar, its README gives sources and
 * licences): JSON lines of `{"group": ..., "record": <a feedback record>}`, read the same way by
 * every similar bench.
 */
import { readFileSync } from 'node:fs';
import type { SimilarRecord } from '../src/similar/considered-text.js';

export const SIMILAR_DATA_DIR = '/work/shared/data/similar';
export const SIMILAR_DATA = [
  `${SIMILAR_DATA_DIR}/webapp-650.jsonl`,
  `${SIMILAR_DATA_DIR}/seamonkey-1076.jsonl`,
];

/** One report of a data file and its true group. */
export interface SimilarDataLine<R = SimilarRecord & { id: string }> {
  readonly group: string;
  readonly record: R;
}

/** Every report of a data file, in the file's order. */
export function readSimilarData<R = SimilarRecord & { id: string }>(
  file: string,
): SimilarDataLine<R>[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SimilarDataLine<R>);
}

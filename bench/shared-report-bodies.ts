/**
 * Delivery bodies whose records are the shared duplicate reports (similar-data.ts), in their
 * files' order and again from the start once all are used, each under the id given: a realistic
 * mix of texts for the worker's bench with grouping on, where the bench payload is one text.
 */
import { readSimilarData, SIMILAR_DATA } from './similar-data.js';

let reports: Record<string, unknown>[] | undefined;

/** The body of the `index`th delivery, its record the shared reports' `index`th (cycled). */
export function sharedReportBody(id: string, index: number): string {
  reports ??= SIMILAR_DATA.flatMap((file) =>
    readSimilarData<Record<string, unknown>>(file).map((line) => line.record),
  );
  const record = reports[index % reports.length]!;
  return JSON.stringify({ ...record, id });
}

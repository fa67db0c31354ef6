/**
 * Each scenario adds its row to the run's results file; the table reporter prints them all at
 * the end. Also the leak check: the test secret and token must appear in no line a process wrote
 * and in no answer a client got.
 */
import { appendFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { Tally } from './invariant.js';

export interface ScenarioRow extends Partial<Tally> {
  readonly scenario: string;
  /** What else the scenario measured, in a few words. */
  readonly notes: string;
  readonly linesChecked: number;
  readonly answersChecked: number;
}

/** Set by vitest.reliability.config.ts for the whole run. */
export const RESULTS_FILE_VARIABLE = 'RELIABILITY_RESULTS';

function recordRow(row: ScenarioRow): void {
  const file = process.env[RESULTS_FILE_VARIABLE];
  if (file) appendFileSync(file, `${JSON.stringify(row)}\n`);
}

/**
 * Ends a scenario: checks that no secret appears in what its processes wrote or in the answers
 * its clients got, and records its row for the table.
 */
export function finishScenario({
  scenario,
  result,
  notes,
  output,
  answers,
  secrets,
}: {
  scenario: string;
  /** Absent for scenarios that send no deliveries (property tests). */
  result?: Tally;
  notes: string;
  /** Everything the scenario's processes wrote. */
  output: string;
  answers: readonly string[];
  secrets: readonly string[];
}): void {
  const linesChecked = expectNoLeaks([output], secrets);
  expectNoLeaks(answers, secrets);
  recordRow({ scenario, ...result, notes, linesChecked, answersChecked: answers.length });
}

/** Asserts that no secret appears anywhere in `texts`; returns how many lines were checked. */
function expectNoLeaks(texts: readonly string[], secrets: readonly string[]): number {
  const lines = texts.flatMap((text) => text.split('\n')).filter((line) => line !== '');
  for (const secret of secrets) {
    const leaking = lines.filter((line) => line.includes(secret));
    expect(leaking, `lines that contain a secret`).toEqual([]);
  }
  return lines.length;
}

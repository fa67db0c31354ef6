/**
 * The benchmark report: the figures as markdown tables, with the ratios against the baselines
 * measured in the same run, followed by what was done to reach them (bench/what-we-tried.md).
 */
import { readFileSync } from 'node:fs';
import type { ConsoleBenchResult, SearchRow } from './console-bench.js';
import type { LatencyRow } from './latency-bench.js';
import type { ReplicaAckRow } from './replica-ack-bench.js';
import type { ReceiverBenchResult, RoundResult, Target } from './receiver-bench.js';
import { median, ratio, spreadPercent } from './stats.js';
import type { TracingBenchResult, TracingSide } from './tracing-bench.js';
import type { TriageBenchResult } from './triage-bench.js';
import type { WorkerBenchResult } from './worker-bench.js';
import type { PairedWorkerRound } from './worker-paired.js';
import type { SimilarBenchResult } from './similar-bench.js';
import { here } from './processes.js';

export interface ReportInput {
  readonly date: Date;
  readonly node: string;
  readonly cores: number;
  readonly cpu: string;
  readonly minutes: number;
  readonly quick: boolean;
  /** Where the processes ran (see pinning.ts). */
  readonly pinning: string;
  readonly receiver: ReceiverBenchResult;
  readonly worker: WorkerBenchResult;
  readonly workerPaired: readonly PairedWorkerRound[];
  readonly latency: readonly LatencyRow[];
  readonly replicaAcks: readonly ReplicaAckRow[];
  readonly triage: TriageBenchResult;
  readonly tracing: TracingBenchResult;
  readonly console: ConsoleBenchResult;
}

/** Doing more than the naive receiver must not cost more. */
const TARGET_VS_NAIVE = 1.0;
/**
 * The worker's floor against a bare BullMQ worker: a delivery is two jobs (its routing and its
 * one run), so two thirds of bare BullMQ's speed per job (issue 21; the aim is 0.4).
 */
const TARGET_WORKER_RATIO = 0.33;
/** The concurrency the headline ratios are taken at. */
export const HEADLINE_CONCURRENCY = 50;

export function renderReport(input: ReportInput): { summary: string; markdown: string } {
  const summary = [
    headline(input),
    receiverTable(input.receiver),
    workerTable(input.worker),
    workerPairedTable(input.workerPaired),
  ]
    .concat(
      latencyTable(input.latency),
      replicaAckTable(input.replicaAcks),
      triageTable(input.triage),
      tracingTable(input.tracing),
      consoleTable(input.console),
      memoryTable(input),
    )
    .join('\n\n');
  const markdown = [
    '# Benchmarks',
    '',
    `Measured ${input.date.toISOString().slice(0, 10)} by \`npm run bench\`${input.quick ? ' --quick' : ''} ` +
      `on Node ${input.node}, ${input.cores} cores (${input.cpu}), in ${input.minutes.toFixed(1)} minutes. ` +
      `${input.pinning} ` +
      'Every figure is the median of its rounds, ± half their range.',
    '',
    summary,
    '',
    readFileSync(here('../../bench/what-we-tried.md'), 'utf8').trim(),
    '',
  ].join('\n');
  return { summary, markdown };
}

function headline({ receiver, worker, workerPaired, triage }: ReportInput): string {
  const at = receiver.rounds.get(HEADLINE_CONCURRENCY);
  const rps = (target: Target) => median(at?.get(target)?.map((r) => r.requestsPerSecond) ?? []);
  const p99 = (target: Target) => median(at?.get(target)?.map((r) => r.p99Ms) ?? []);
  const cpu = (target: Target) =>
    median(at?.get(target)?.map((r) => r.serverCpuMicrosPerRequest) ?? []);
  const w = worker.get(HEADLINE_CONCURRENCY);
  const pairedRatios = workerPaired.map((round) => round.ratio);
  const workerRatio = ratio(
    median(w?.get('worker path') ?? []),
    median(w?.get('bare BullMQ') ?? []),
  );
  const rows = [
    [
      'receiver: full path / naive receiver, req/s',
      fixed(ratio(rps('full path'), rps('naive receiver'))),
      `>= ${TARGET_VS_NAIVE}`,
    ],
    [
      'receiver: full path / naive receiver, req/s, paired (both loaded at once, one core)',
      `${fixed(median(receiver.pairedRatios))} ± ${spreadPercent(receiver.pairedRatios).toFixed(0)}%`,
      `>= ${TARGET_VS_NAIVE}`,
    ],
    [
      'receiver: full path / naive receiver, server CPU per request',
      fixed(ratio(cpu('full path'), cpu('naive receiver'))),
      '',
    ],
    [
      'receiver: full path / bare Express, req/s',
      fixed(ratio(rps('full path'), rps('bare Express'))),
      '',
    ],
    [
      'receiver: full path / bare Express, p99 latency',
      fixed(ratio(p99('full path'), p99('bare Express'))),
      '',
    ],
    [
      'receiver: naive receiver / bare Express, req/s (for scale)',
      fixed(ratio(rps('naive receiver'), rps('bare Express'))),
      '',
    ],
    [
      'receiver: the work alone, no Redis / bare Express, req/s (a ceiling)',
      fixed(ratio(rps('work alone'), rps('bare Express'))),
      '',
    ],
    [
      'worker: worker path, deliveries/s (each routed and run) / bare BullMQ, jobs/s',
      fixed(workerRatio),
      `>= ${TARGET_WORKER_RATIO}`,
    ],
    [
      'worker: the same, paired (both processes at once, one core)',
      pairedRatios.length === 0
        ? '—'
        : `${fixed(median(pairedRatios))} ± ${spreadPercent(pairedRatios).toFixed(0)}%`,
      `>= ${TARGET_WORKER_RATIO}`,
    ],
    triageHeadlineRow(triage),
  ];
  return [
    `## Headline (concurrency ${HEADLINE_CONCURRENCY})`,
    '',
    table(['ratio', 'measured', 'target'], rows),
  ].join('\n');
}

function receiverTable({ rounds }: ReceiverBenchResult): string {
  const rows: string[][] = [];
  for (const [connections, byTarget] of rounds) {
    const rpsOf = (target: Target) =>
      median((byTarget.get(target) ?? []).map((r) => r.requestsPerSecond));
    for (const [target, results] of byTarget) {
      const of = (pick: (r: RoundResult) => number) => results.map(pick);
      const rps = median(of((r) => r.requestsPerSecond));
      const redis = median(of((r) => r.redisCpuMicrosPerRequest));
      rows.push([
        String(connections),
        target,
        withSpread(of((r) => r.requestsPerSecond)),
        fixed(ratio(rps, rpsOf('bare Express'))),
        fixed(ratio(rps, rpsOf('naive receiver'))),
        String(median(of((r) => r.p50Ms))),
        String(median(of((r) => r.p99Ms))),
        String(Math.round(median(of((r) => r.serverCpuMicrosPerRequest)))),
        // Only the naive receiver and the full path talk to Redis.
        target === 'naive receiver' || target === 'full path' ? String(Math.round(redis)) : '—',
      ]);
    }
  }
  return [
    '## Receiver: POST /webhooks/feedback, ~3 KB signed deliveries, each one new',
    '',
    table(
      [
        'concurrency',
        'server',
        'req/s',
        'vs bare Express',
        'vs naive',
        'p50 ms',
        'p99 ms',
        'server CPU µs/req',
        'Redis CPU µs/req',
      ],
      rows,
    ),
  ].join('\n');
}

function workerTable(result: WorkerBenchResult): string {
  const rows: string[][] = [];
  for (const [concurrency, byTarget] of result) {
    const bare = median(byTarget.get('bare BullMQ') ?? []);
    for (const [target, perSecond] of byTarget) {
      rows.push([
        String(concurrency),
        target,
        withSpread(perSecond),
        fixed(ratio(median(perSecond), bare)),
      ]);
    }
  }
  return [
    '## Worker: deliveries drained per second',
    '',
    table(['concurrency', 'worker', 'deliveries/s', 'vs bare BullMQ'], rows),
  ].join('\n');
}

function tracingTable(tracing: TracingBenchResult): string {
  const title = '## Tracing: its cost at 100% sampling (OTLP/HTTP protobuf to a local sink)';
  if ('skipped' in tracing) return [title, '', `Not measured: ${tracing.skipped}.`].join('\n');
  const row = (what: string, unit: string, sides: { off: TracingSide; on: TracingSide }) => {
    const ratios = sides.on.perSecond.map((on, round) => on / sides.off.perSecond[round]!);
    return [
      what,
      `${withSpread(sides.off.perSecond)} ${unit}`,
      `${withSpread(sides.on.perSecond)} ${unit}`,
      fixed(median(ratios)),
      `${Math.round(median(sides.off.cpuMicros))} → ${Math.round(median(sides.on.cpuMicros))}`,
    ];
  };
  return [
    title,
    '',
    table(
      ['process', 'tracing off', 'tracing on', 'on / off', 'server CPU µs per item, off → on'],
      [
        row('receiver (paired rounds, c=50)', 'req/s', tracing.receiver),
        row('worker (alternating rounds, one no-op handler)', 'deliveries/s', tracing.worker),
      ],
    ),
    '',
    `Exported meanwhile: ${tracing.exported.requests} OTLP requests, ${(tracing.exported.bytes / 1024 / 1024).toFixed(1)} MiB. With tracing off nothing of OpenTelemetry's SDK is loaded: the receiver's full path above runs without it.`,
  ].join('\n');
}

function workerPairedTable(rounds: readonly PairedWorkerRound[]): string {
  return [
    `## Worker against bare BullMQ, paired (c=${HEADLINE_CONCURRENCY}, \`work\` and a bare BullMQ worker as processes on one core at once)`,
    '',
    table(
      ['round', 'deliveries per bare job', 'worker CPU µs per delivery', 'bare CPU µs per job'],
      rounds.map((round, index) => [
        String(index + 1),
        fixed(round.ratio),
        String(Math.round(round.oursCpuMicros)),
        String(Math.round(round.bareCpuMicros)),
      ]),
    ),
  ].join('\n');
}

function latencyTable(rows: readonly LatencyRow[]): string {
  return [
    '## End to end: from the POST to the start of its handler (open loop)',
    '',
    '`feedback-receiver serve` and `feedback-receiver work` as processes of their own, after a round of 5 s not counted (their start-up).',
    '',
    table(
      ['offered /s', 'sent', 'handled', 'p50 ms', 'p99 ms'],
      rows.map((row) => [
        String(row.perSecond),
        String(row.sent),
        String(row.handled),
        String(row.p50Ms),
        String(row.p99Ms),
      ]),
    ),
  ].join('\n');
}

/** Intake's p99 with operators searching: at most twice its p99 alone, or 20 ms more (issue 22). */
function consoleTarget(aloneP99Ms: number): number {
  return Math.max(2 * aloneP99Ms, aloneP99Ms + 20);
}

function consoleTable(result: ConsoleBenchResult): string {
  const { alone, withConsole } = result;
  const searchRow = (row: SearchRow, target: number) => [
    String(row.history),
    String(row.searches),
    String(row.searchP50Ms),
    String(row.searchP99Ms),
    `<= ${target}`,
    String(row.busy),
  ];
  return [
    '## The console beside intake',
    '',
    `${result.history} deliveries handled and kept; intake at ${result.perSecond}/s (open loop), ` +
      `alone and then while ${result.operators} operators search the console's API without pause ` +
      '(a word every record has, a record id, an email; each asks again once answered). ' +
      `The history holds ${result.historyBytesPerEntry} bytes per delivery (MEMORY USAGE of its ` +
      'keys; target <= 1024).',
    '',
    table(
      ['', 'intake answers 2xx', 'intake p50 ms', 'intake p99 ms', 'target p99 ms'],
      [
        [
          'alone',
          `${alone.ok} of ${alone.sent}`,
          String(alone.answerP50Ms),
          String(alone.answerP99Ms),
          '',
        ],
        [
          `with ${result.operators} operators`,
          `${withConsole.ok} of ${withConsole.sent}`,
          String(withConsole.answerP50Ms),
          String(withConsole.answerP99Ms),
          `<= ${consoleTarget(alone.answerP99Ms)}`,
        ],
      ],
    ),
    '',
    table(
      [
        'deliveries kept',
        'searches',
        'search p50 ms',
        'search p99 ms',
        'target p99 ms',
        'answered 503 CONSOLE_BUSY',
      ],
      [searchRow(result.atHistory, 50), searchRow(result.atLarger, 100)],
    ),
  ].join('\n');
}

function replicaAckTable(rows: readonly ReplicaAckRow[]): string {
  return [
    '## ACK_REPLICAS: the answer, with and without waiting for the replica (open loop)',
    '',
    'A primary with one replica on the other core; the receiver answers once the primary has the',
    'delivery (0), or once the replica has it too (1, Redis `WAIT`).',
    '',
    table(
      ['ACK_REPLICAS', 'offered /s', 'sent', 'acknowledged', 'answer p50 ms', 'answer p99 ms'],
      rows.map((row) => [
        String(row.ackReplicas),
        String(row.perSecond),
        String(row.sent),
        String(row.acknowledged),
        String(row.p50Ms),
        String(row.p99Ms),
      ]),
    ),
  ].join('\n');
}

/** Auto-triage at the API's real minute: its pace against the limit's, with nothing refused. */
const TARGET_OF_LIMIT = 0.95;

function triageHeadlineRow(triage: TriageBenchResult): string[] {
  const measured = `${percent(triage.ofLimit)}, ${triage.refused} refused`;
  return triage.scaled
    ? [
        `triage: PATCH pace / API limit, refused (scaled: the minute as ${triage.windowMs / 1000} s; slots held ${triage.marginMs} ms past it)`,
        measured,
        '0 refused',
      ]
    : [
        `triage: PATCH pace / API limit, refused (the real minute, ${triage.workerProcesses} worker processes)`,
        measured,
        `>= ${percent(TARGET_OF_LIMIT)}, 0 refused`,
      ];
}

function triageTable(triage: TriageBenchResult): string {
  const window = triage.scaled ? `${triage.windowMs / 1000} s` : 'minute';
  return [
    triage.scaled
      ? `## Auto-triage under the API rate limit (scaled: the minute as ${window}, one worker in the bench's process, slots held ${triage.marginMs} ms past the window)`
      : `## Auto-triage under the API rate limit (the real minute, ${triage.workerProcesses} \`feedback-receiver work\` processes)`,
    '',
    table(
      [
        'deliveries',
        'PATCHed',
        'failed runs',
        `limit / ${window}`,
        `achieved / ${window}`,
        'of the limit',
        `busiest ${window}`,
        'refused (429)',
        'first to last PATCH s',
        'ideal s',
        'took s',
      ],
      [
        [
          String(triage.deliveries),
          String(triage.patched),
          String(triage.failedRuns),
          String(triage.limit),
          triage.achievedPerWindow.toFixed(1),
          percent(triage.ofLimit),
          String(triage.busiestWindow),
          String(triage.refused),
          triage.firstToLastSeconds.toFixed(1),
          triage.idealSeconds.toFixed(0),
          triage.seconds.toFixed(1),
        ],
      ],
    ),
  ].join('\n');
}

/** `npm run bench -- --only triage`: the triage section alone, with its headline row. */
export function renderTriageReport(
  input: Pick<ReportInput, 'date' | 'node' | 'cores' | 'cpu' | 'minutes' | 'quick' | 'triage'>,
): { summary: string; markdown: string } {
  const summary = [
    '## Headline',
    '',
    table(['ratio', 'measured', 'target'], [triageHeadlineRow(input.triage)]),
    '',
    triageTable(input.triage),
  ].join('\n');
  return sectionReport(input, 'triage', 'auto-triage only', summary);
}

export function renderConsoleReport(
  input: Pick<ReportInput, 'date' | 'node' | 'cores' | 'cpu' | 'minutes' | 'quick' | 'console'>,
): { summary: string; markdown: string } {
  const summary = consoleTable(input.console);
  return sectionReport(input, 'console', 'the console beside intake only', summary);
}

function memoryTable({ receiver: { memory } }: ReportInput): string {
  return [
    '## Memory',
    '',
    table(
      ['what', 'measured'],
      [
        ['receiver RSS at start', `${memory.rssBeforeMiB.toFixed(0)} MiB`],
        [
          `receiver RSS after ${memory.sustainedSeconds} s of load`,
          `${memory.rssAfterMiB.toFixed(0)} MiB`,
        ],
        [
          `Redis memory per queued delivery (${memory.deliveriesMeasured} measured)`,
          `${(memory.redisBytesPerDelivery / 1024).toFixed(1)} KiB`,
        ],
      ],
    ),
  ].join('\n');
}

function withSpread(values: readonly number[]): string {
  return `${Math.round(median(values))} ± ${spreadPercent(values).toFixed(0)}%`;
}

function percent(value: number): string {
  return Number.isFinite(value) ? `${(value * 100).toFixed(1)}%` : '—';
}

function fixed(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}x` : '—';
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function renderSimilarReport(
  input: Pick<ReportInput, 'date' | 'node' | 'cores' | 'cpu' | 'minutes' | 'quick'> & {
    similar: SimilarBenchResult;
  },
): { summary: string; markdown: string } {
  const { similar } = input;
  const fixed = (value: number) => value.toFixed(3);
  const summary = [
    '## Quality, through `serve` and `work`',
    '',
    table(
      ['data', 'reports', 'R@1', 'R@5', 'R@10', 'B³ precision', 'B³ recall', 'groups (true)'],
      similar.files.map(({ file, reports, scores }) => [
        file,
        String(reports),
        fixed(scores.recallAt[1]),
        fixed(scores.recallAt[5]),
        fixed(scores.recallAt[10]),
        fixed(scores.bCubedPrecision),
        fixed(scores.bCubedRecall),
        `${scores.groupsFormed} (${scores.trueGroups})`,
      ]),
    ),
    '',
    '## Cost',
    '',
    table(
      ['deliveries kept', 'grouping p50', 'grouping p95'],
      similar.timing.map(({ kept, p50Ms, p95Ms }) => [
        String(kept),
        `${p50Ms.toFixed(1)} ms`,
        `${p95Ms.toFixed(1)} ms`,
      ]),
    ),
    '',
    `Redis memory of grouping: ${Math.round(similar.bytesPerDelivery)} bytes per delivery kept. ` +
      `The worker's paired ratio to bare BullMQ: ${pairedRatio(similar.ratio.off)} with SIMILAR=off, ` +
      `${pairedRatio(similar.ratio.on)} with grouping on (its deliveries all alike: one group).`,
  ].join('\n');
  return sectionReport(input, 'similar', 'similar feedback only', summary);
}

/** A paired ratio; none when the round had nothing to count. */
function pairedRatio(ratio: number): string {
  return Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : 'none (nothing counted)';
}

/** The report of one `--only` section: a title, how and where it was measured, the section. */
function sectionReport(
  input: Pick<ReportInput, 'date' | 'node' | 'cores' | 'cpu' | 'minutes' | 'quick'>,
  only: string,
  title: string,
  summary: string,
): { summary: string; markdown: string } {
  const markdown = [
    `# Benchmarks: ${title}`,
    '',
    `Measured ${input.date.toISOString().slice(0, 10)} by \`npm run bench -- --only ${only}${input.quick ? ' --quick' : ''}\` ` +
      `on Node ${input.node}, ${input.cores} cores (${input.cpu}), in ${input.minutes.toFixed(1)} minutes.`,
    '',
    summary,
    '',
  ].join('\n');
  return { summary, markdown };
}

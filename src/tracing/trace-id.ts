/**
 * The trace a job belongs to, read from what BullMQ keeps of it: the `traceparent` its producer
 * put in the job's `opts.telemetry.metadata` (W3C Trace Context) when tracing was on.
 */
const TRACEPARENT = /"traceparent":"00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}"/;

/** The trace id in a job's telemetry metadata; undefined when it was added without tracing. */
export function traceIdOf(metadata: string | undefined): string | undefined {
  return metadata === undefined ? undefined : TRACEPARENT.exec(metadata)?.[1];
}

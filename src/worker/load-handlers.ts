/**
 * Loads the custom handlers named in HANDLERS. Any problem stops the worker at start, with a
 * message naming the module: a worker that silently skips a handler would drop its deliveries.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isHandler, type Handler } from './handler.js';

export class HandlerLoadError extends Error {
  override readonly name = 'HandlerLoadError';
}

/**
 * Imports each module (paths resolve from `cwd`) and takes its default export: one handler, or
 * an array of them.
 *
 * @throws {HandlerLoadError} when a module cannot be loaded or exports no handler.
 */
export async function loadHandlerModules(
  paths: readonly string[],
  cwd: string = process.cwd(),
): Promise<Handler[]> {
  const handlers: Handler[] = [];
  for (const path of paths) {
    const file = isAbsolute(path) ? path : resolve(cwd, path);
    let module: { default?: unknown };
    try {
      module = (await import(pathToFileURL(file).href)) as { default?: unknown };
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw new HandlerLoadError(`HANDLERS: cannot load ${path}: ${reason}`);
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

/** @throws {HandlerLoadError} when two handlers share a name. */
export function assertUniqueNames(handlers: readonly Handler[]): void {
  const seen = new Set<string>();
  for (const { name } of handlers) {
    if (seen.has(name)) throw new HandlerLoadError(`two handlers are named "${name}"`);
    seen.add(name);
  }
}

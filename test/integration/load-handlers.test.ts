import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  assertUniqueNames,
  HandlerLoadError,
  loadHandlerModules,
} from '../../src/worker/load-handlers.js';

// Fixtures import 'feedback-receiver', the built package (npm test builds it first).
const fixtures = fileURLToPath(new URL('../fixtures/handlers/', import.meta.url));

async function loadError(paths: string[]): Promise<string> {
  try {
    assertUniqueNames(await loadHandlerModules(paths, fixtures));
  } catch (error) {
    expect(error).toBeInstanceOf(HandlerLoadError);
    return (error as Error).message;
  }
  throw new Error('expected loading to fail');
}

describe('loading HANDLERS', () => {
  it('takes a module whose default export is an array of handlers, resolved from cwd', async () => {
    const handlers = await loadHandlerModules(['./two-handlers.mjs'], fixtures);
    expect(handlers.map((handler) => handler.name)).toEqual(['fixture-one', 'fixture-two']);
  });

  it('names a module that fails to load', async () => {
    expect(await loadError(['./throws-on-load.mjs'])).toBe(
      'HANDLERS: cannot load ./throws-on-load.mjs: this module is broken',
    );
  });

  it('names a module that does not exist', async () => {
    expect(await loadError(['./missing.mjs'])).toMatch(/^HANDLERS: cannot load \.\/missing\.mjs: /);
  });

  it('names a module that exports something that is not a handler', async () => {
    expect(await loadError(['./not-a-handler.mjs'])).toMatch(
      /^HANDLERS: \.\/not-a-handler\.mjs does not export a handler/,
    );
  });

  it('refuses two handlers with one name', async () => {
    expect(await loadError(['./two-handlers.mjs', './duplicate-name.mjs'])).toBe(
      'two handlers are named "fixture-one"',
    );
  });
});

/**
 * Reads JSON with comments and trailing commas, as editors write JSONC, so a rules file can
 * explain itself; and says where in the text a value sits, so an error names its line and column.
 * The parsing is jsonc-parser's, the one VS Code uses for its own settings files.
 */
import {
  findNodeAtLocation,
  getNodeValue,
  parseTree,
  printParseErrorCode,
  type ParseError,
} from 'jsonc-parser';

export interface JsoncDocument {
  readonly value: unknown;
  /** `line:column` (both from 1) of the value at `path`, or of its nearest parent that exists. */
  positionOf(path: readonly PropertyKey[]): string;
}

export class JsoncSyntaxError extends Error {
  override readonly name = 'JsoncSyntaxError';
}

/** @throws {JsoncSyntaxError} naming the line and column of each problem. */
export function parseJsonc(text: string): JsoncDocument {
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { allowTrailingComma: true, allowEmptyContent: false });
  if (errors.length > 0 || tree === undefined) {
    const problems = errors.map(
      (error) => `${position(text, error.offset)} ${describeParseError(error)}`,
    );
    throw new JsoncSyntaxError(problems.join('; ') || 'empty');
  }
  return {
    value: getNodeValue(tree) as unknown,
    positionOf(path) {
      const keys = path.filter((key) => typeof key !== 'symbol');
      for (let depth = keys.length; depth >= 0; depth -= 1) {
        const node = findNodeAtLocation(tree, keys.slice(0, depth));
        if (node) return position(text, node.offset);
      }
      return position(text, tree.offset);
    },
  };
}

function describeParseError({ error }: ParseError): string {
  // InvalidSymbol -> "invalid symbol"
  return printParseErrorCode(error)
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();
}

function position(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `${line}:${offset - before.lastIndexOf('\n')}`;
}

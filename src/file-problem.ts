/** Why a file could not be read, in words: Node's message repeats the path after a code. */
const FILE_PROBLEMS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
};

export function fileProblem(error: unknown): string {
  return FILE_PROBLEMS[(error as NodeJS.ErrnoException).code ?? ''] ?? (error as Error).message;
}

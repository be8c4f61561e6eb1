/**
 * Ends a CLI with `code` once its output is written: both streams are drained first so that no line of the report is
 * lost, then the process ends even if a pool or a timer would keep it alive.
 */
export async function exitWith(code: number): Promise<never> {
  await new Promise((resolve) => process.stdout.write('', resolve));
  await new Promise((resolve) => process.stderr.write('', resolve));
  process.exit(code);
}

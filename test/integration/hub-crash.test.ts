import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { balanceOf } from '../../domain/platform/ledger.ts';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { connectTemporal, createTemporalEngine, createTemporalHub } from '../../lib/temporal.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { startModelServer, type ChatRequestBody, type ModelServer } from '../support/model-server.ts';

// The worker as the separate process a deployment runs (worker/main.ts), killed outright in the middle of a question:
// the question is answered once, each tool billed once, whatever the worker that picks it up again.

const ROOT = path.resolve(import.meta.dirname, '../..');

let t: TestApp;
let temporal: Awaited<ReturnType<typeof connectTemporal>>;
let model: ModelServer;
let dataDir: string;
let env: NodeJS.ProcessEnv;
let worker: { child: ChildProcess; exited: Promise<void> } | null = null;

async function startWorker() {
  const child = spawn(process.execPath, ['worker/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const watch = (chunk: Buffer) => {
      seen += chunk;
      if (seen.includes('Worker à l’écoute')) resolve();
    };
    child.stdout!.on('data', watch);
    child.stderr!.on('data', watch);
    void exited.then(() => reject(new Error(`worker arrêté avant d’être prêt :\n${seen}`)));
  });
  worker = { child, exited };
}

beforeAll(async () => {
  const taskQueue = `hub-crash-${randomBytes(6).toString('hex')}`;
  temporal = await connectTemporal(inject('temporalAddress'));
  t = await createTestApp({
    services: {
      tasks: createTemporalEngine(temporal.client, { taskQueue, delaisLivraisonS: [1] }),
      hub: createTemporalHub(temporal.client, { taskQueue }),
    },
  });
  await loadSandbox(t.db, { dataset: 'live' });
  model = await startModelServer();
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-hub-crash-'));
  env = { ...process.env, DATABASE_URL: t.databaseUrl, TEMPORAL_ADDRESS: inject('temporalAddress') };
  for (const name of ['LOG_LEVEL', 'ADMIN_TOKEN', 'PORT', 'HOST']) delete env[name];
  Object.assign(env, {
    TEMPORAL_TASK_QUEUE: taskQueue,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    OPENAI_BASE_URL: model.url,
    OPENAI_MODEL: 'modele-test',
    OPENAI_API_KEY: 'sk-test',
  });
  await startWorker();
}, 120_000);

afterAll(async () => {
  if (worker && worker.child.exitCode === null) {
    worker.child.kill('SIGKILL');
    await worker.exited;
  }
  await t?.close();
  await temporal?.close();
  await model?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('a Hub question through a worker killed in its middle', () => {
  it('is answered once and billed once', { timeout: 120_000 }, async () => {
    const { rows } = await t.db.query<{ cle_ban: string }>(
      `SELECT cle_ban FROM dvf_mutations WHERE dataset = 'live' AND cle_ban IS NOT NULL ORDER BY cle_ban LIMIT 1`,
    );
    let tuer: (() => void) | null = null;
    const tue = new Promise<void>((resolve) => (tuer = resolve));
    let tours = 0;
    model.setHandler(async (body: ChatRequestBody) => {
      tours += 1;
      const appele = (body.messages as any[]).some((m) => m.role === 'tool');
      if (!appele) return { toolCalls: [{ name: 'ventes_adresse', arguments: { cle_ban: rows[0]!.cle_ban } }] };
      // The turn after the tool: the first time, the worker is killed while the model thinks.
      if (tuer) {
        const kill = tuer;
        tuer = null;
        kill();
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
      return { content: 'Les ventes de l’adresse ont été lues.' };
    });
    const org = await t.organisation({ acces: 'usage' }, { personnelle: true });
    const avant = (await balanceOf(t.db, org.id, null)).restants;
    const question = t.call('POST', '/hub/questions', org.cle, { question: 'Quelles ventes à cette adresse ?' });
    await tue;
    worker!.child.kill('SIGKILL');
    await worker!.exited;
    await startWorker();
    const reponse = await question;
    expect(reponse.statusCode, reponse.body).toBe(200);
    const body = reponse.json();
    expect(body.appels.map((a: any) => [a.outil, a.credits])).toEqual([['ventes_adresse', 5]]);
    expect(body.credits.debites).toBe(125);
    // The turn cut by the kill was played again on the new worker; the tool was not called again.
    expect(tours).toBe(3);
    expect((await balanceOf(t.db, org.id, null)).restants).toBe(avant - 125);
    const { rows: mouvements } = await t.db.query<{ genre: string; credits: number; operation: string }>(
      `SELECT genre, credits, operation FROM mouvements WHERE organisation_id = $1 AND genre IN ('debit', 'restitution')
        ORDER BY id`,
      [org.id],
    );
    expect(mouvements).toEqual([
      { genre: 'debit', credits: -120, operation: 'question_hub' },
      { genre: 'debit', credits: -5, operation: 'ventes_adresse' },
    ]);
    const conversation = (await t.call('GET', '/hub/conversations', org.cle)).json().conversations[0];
    const lue = (await t.call('GET', `/hub/conversations/${conversation.id}`, org.cle)).json();
    expect(lue.messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);
  });
});

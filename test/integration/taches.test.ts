import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { createDb, type Db } from '../../db/client.ts';
import { failTask } from '../../domain/taches/taches.ts';
import { loadConfig } from '../../lib/config.ts';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../support/app.ts';
import { createRuntime } from '../support/runtime.ts';

// Two api instances on one database, each with its own pool and its own listening connection, as two processes
// would have; one Temporal runtime whose worker is started only when a test wants its tasks to run.
let a: TestApp;
let b: FastifyInstance;
let bDb: Db;
let bDataDir: string;
let runtime: Awaited<ReturnType<typeof createRuntime>>;

/** How long a client may wait (attendre, s): the tests check that answers come well before it. */
const ATTENDRE = 30;

beforeAll(async () => {
  runtime = await createRuntime();
  a = await createTestApp({ services: { tasks: runtime.engine } });
  bDb = createDb(a.databaseUrl, 5);
  bDataDir = await mkdtemp(path.join(tmpdir(), 'svc-test-data-'));
  b = await buildApp({
    config: loadConfig({ DATA_DIR: bDataDir, ADMIN_TOKEN, LOG_LEVEL: 'silent' }),
    db: bDb,
    services: { tasks: runtime.engine },
  });
  await b.ready();
}, 60_000);
afterAll(async () => {
  await b?.close();
  await bDb?.end();
  await runtime?.close();
  await a?.close();
  if (bDataDir) await rm(bDataDir, { recursive: true, force: true });
});

/** A PLU reading started on instance A at a point at sea: no zone there, so it ends as soon as it has looked. */
async function startOnA(cle: string, lat: number) {
  const res = await a.call('POST', '/urbanisme/reglements', cle, { lat, lon: -4, themes: ['hauteur'] });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().tache as { id: string; statut: string; resultat_url: string };
}

/** `GET <resultat_url>?attendre=30` on instance B, timed from now. */
function waitOnB(cle: string, url: string) {
  const sent = Date.now();
  let settled = false;
  const answer = b
    .inject({ method: 'GET', url: `${url}?attendre=${ATTENDRE}`, headers: { authorization: `Bearer ${cle}` } })
    .then((res) => ({ res, at: Date.now() }))
    .finally(() => (settled = true));
  return { answer, sent, pending: () => !settled };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('attendre across api instances', () => {
  it('returns on instance B as soon as a worker ends a task started on instance A', async () => {
    const org = await a.organisation({ acces: 'usage' });
    const tache = await startOnA(org.cle, 46.001);
    expect(tache.statut).toBe('en_attente');

    const waiting = waitOnB(org.cle, tache.resultat_url);
    // No worker yet: the task cannot end, so B must still be waiting rather than answering with the task unended.
    await pause(1000);
    expect(waiting.pending()).toBe(true);

    const worker = await runtime.startWorker(a.db, null);
    try {
      const { res, at } = await waiting.answer;
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.tache).toMatchObject({ id: tache.id, statut: 'terminee' });
      expect(body.resultat.statut).toBe('zone_absente');
      // Nothing to read at sea: the reservation was given back.
      expect(body.credits).toEqual({ debites: 0, restants: 500 });
      // Returned with the end, not at the deadline of its wait.
      expect(at - Date.parse(body.tache.termine_le)).toBeLessThan(5_000);
      expect(at - waiting.sent).toBeLessThan((ATTENDRE / 2) * 1000);
    } finally {
      await worker.stop();
    }
  }, 60_000);

  it('still returns promptly when the listening connections were cut while waiting', async () => {
    const org = await a.organisation({ acces: 'usage' });
    // No worker runs now: the task stays en_attente until it is ended below.
    const tache = await startOnA(org.cle, 46.002);
    const waiting = waitOnB(org.cle, tache.resultat_url);
    await pause(500);
    expect(waiting.pending()).toBe(true);

    // What a database restart or a network cut does to every instance's listening connection.
    const cut = await a.db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND query ILIKE 'LISTEN%'`,
    );
    expect(cut.rowCount).toBeGreaterThan(0);
    // Ended from yet another connection, as a worker of another machine ends it: with an error, credits given back.
    const other = createDb(a.databaseUrl, 1);
    try {
      await failTask(other, tache.id, { code: 'erreur_interne', detail: 'Arrêtée par le test.' });
    } finally {
      await other.end();
    }

    const { res, at } = await waiting.answer;
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.tache).toMatchObject({ id: tache.id, statut: 'echouee' });
    expect(body.erreur).toEqual({ code: 'erreur_interne', detail: 'Arrêtée par le test.' });
    expect(body.credits).toEqual({ debites: 0, restants: 500 });
    expect(at - Date.parse(body.tache.termine_le)).toBeLessThan(5_000);
    expect(at - waiting.sent).toBeLessThan((ATTENDRE / 2) * 1000);
  }, 60_000);
});

describe('starting tasks', () => {
  it('reserves exactly what exists when starts race: the others are refused and nothing is reserved twice', async () => {
    // 500 credits: room for 8 readings of 60. The balance the key checks saw is the same for all twelve, so the
    // reservation itself must refuse the last four.
    const org = await a.organisation({ acces: 'usage' });
    const starts = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        a.call('POST', '/urbanisme/reglements', org.cle, { lat: 46.1 + i / 1000, lon: -4 }),
      ),
    );
    const accepted = starts.filter((r) => r.statusCode === 202);
    const refused = starts.filter((r) => r.statusCode !== 202);
    expect(accepted).toHaveLength(8);
    for (const r of refused) expect([r.statusCode, r.json().code]).toEqual([402, 'credits_insuffisants']);
    const { rows } = await a.db.query(
      `SELECT count(*)::int AS n, count(DISTINCT tache)::int AS taches, -sum(credits)::int AS credits
         FROM mouvements WHERE organisation_id = $1 AND genre = 'reservation'`,
      [org.id],
    );
    expect(rows[0]).toEqual({ n: 8, taches: 8, credits: 480 });
    const ids = accepted.map((r) => r.json().tache.id);
    const tasks = await a.db.query(`SELECT id FROM taches WHERE organisation_id = $1`, [org.id]);
    expect(tasks.rows.map((r) => r.id).sort()).toEqual([...ids].sort());
  });

  it('makes one task and one reservation for concurrent starts under one Idempotency-Key', async () => {
    const org = await a.organisation({ acces: 'usage' });
    const headers = { 'idempotency-key': 'cle-unique-1' };
    const body = { lat: 46.2, lon: -4 };
    const starts = await Promise.all(
      Array.from({ length: 5 }, () => a.call('POST', '/urbanisme/reglements', org.cle, body, headers)),
    );
    expect(starts.map((r) => r.statusCode)).toEqual([202, 202, 202, 202, 202]);
    expect(new Set(starts.map((r) => r.json().tache.id)).size).toBe(1);
    const { rows } = await a.db.query(
      `SELECT count(*)::int AS n FROM mouvements WHERE organisation_id = $1 AND genre = 'reservation'`,
      [org.id],
    );
    expect(rows[0].n).toBe(1);
    const other = await a.call('POST', '/urbanisme/reglements', org.cle, { lat: 46.3, lon: -4 }, headers);
    expect([other.statusCode, other.json().code]).toEqual([409, 'conflit']);
  });
});

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildApp } from '../../api/app.ts';
import { createDb, type Db } from '../../db/client.ts';
import { defineOperation, type Operation } from '../../domain/catalogue.ts';
import { BALANCE_MEMORY_MS, MEMORY_MS } from '../../domain/platform/authenticate.ts';
import { loadConfig } from '../../lib/config.ts';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../support/app.ts';

// Two api instances on one database, as behind a load balancer: each with its own memory (keys, balances, quota
// shares, served answers) and its own pool; the ledger and the quota are shared through the database.
const priced = defineOperation({
  tool: 'compter_essai',
  method: 'POST',
  path: '/essai/compter',
  summary: 'Compter',
  description: 'Renvoie la longueur de son texte.',
  credits: 1,
  unit: 'appel',
  scope: 'territoire',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  timeoutS: 2,
  input: z.object({ texte: z.string().min(1) }).strict(),
  output: z.object({ texte: z.string(), longueur: z.number() }),
  handler: async (input) => ({ texte: input.texte, longueur: input.texte.length }),
});
const free = defineOperation({ ...priced, tool: 'gratuit_essai', path: '/essai/gratuit', credits: 0 });
const OPS = [priced, free] as Operation[];

// Both instances read the same clock, fixed in the middle of a minute: a test never straddles two quota windows.
let clock = Date.parse('2031-03-04T10:20:30Z');
const services = { now: () => new Date(clock) };

let a: TestApp;
let b: { app: FastifyInstance; db: Db; close(): Promise<void> };
beforeAll(async () => {
  a = await createTestApp({ operations: OPS, services });
  const db = createDb(a.databaseUrl, 10);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-test-data-'));
  const config = loadConfig({ DATA_DIR: dataDir, ADMIN_TOKEN, LOG_LEVEL: 'silent' });
  const app = await buildApp({ config, db, operations: OPS, services });
  await app.ready();
  b = {
    app,
    db,
    async close() {
      await app.close();
      await db.end();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

/** The i-th call goes to instance A when i is even, to B when odd. */
function call(i: number, cle: string, url: string, texte: string) {
  const app = i % 2 === 0 ? a.app : b.app;
  return app.inject({
    method: 'POST',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${cle}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ texte }),
  });
}

async function ledger(organisationId: string) {
  const { rows } = await a.db.query(
    `SELECT count(*) FILTER (WHERE genre = 'debit')::int AS debits,
            coalesce(-sum(credits) FILTER (WHERE genre = 'debit'), 0)::int AS debites,
            array_remove(array_agg(requete), NULL) AS requetes
       FROM mouvements WHERE organisation_id = $1`,
    [organisationId],
  );
  return rows[0] as { debits: number; debites: number; requetes: string[] };
}

describe('two api instances on one database', () => {
  it('never overspend: 100 concurrent priced calls over both with 10 credits left debit exactly 10', async () => {
    const org = await a.organisation({ acces: 'usage', quota_minute: 1000 });
    await a.admin('POST', `/organisations/${org.id}/credits`, { credits: -490, motif: 'il en reste 10' });
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => call(i, org.cle, '/essai/compter', `t${i}`)),
    );
    const served = results.filter((r) => r.statusCode === 200);
    expect(served).toHaveLength(10);
    expect(results.filter((r) => r.statusCode === 402 && r.json().code === 'credits_insuffisants')).toHaveLength(90);
    // Each served answer is one debit row, with its request id; nothing else is debited.
    const l = await ledger(org.id);
    expect(l.debites).toBe(10);
    expect(l.requetes.sort()).toEqual(served.map((r) => r.headers['svc-requete']).sort());
    expect(served.every((r) => r.headers['svc-credits-debites'] === '1')).toBe(true);
    const balance = await a.admin('GET', `/organisations/${org.id}`);
    expect(balance.body.solde.restants).toBe(0);
    // The statement explains itself line by line: each row's balance is the previous one plus what it moved.
    const releve = await a.admin('GET', `/organisations/${org.id}/releve?limite=200`);
    const lines = [...releve.body.mouvements].reverse();
    expect(lines).toHaveLength(12);
    lines.reduce((before, line) => {
      expect(line.apres.gratuits).toBe(before + line.pools.gratuits);
      return line.apres.gratuits;
    }, 0);
  });

  it('holds a key’s monthly cap across both: 40 concurrent calls under a cap of 10 debit 10', async () => {
    const org = await a.organisation({ acces: 'usage', quota_minute: 1000 }, { plafond_mensuel: 10 });
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => call(i, org.cle, '/essai/compter', `c${i}`)),
    );
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(10);
    expect(results.filter((r) => r.statusCode === 429 && r.json().code === 'plafond_cle')).toHaveLength(30);
    expect((await ledger(org.id)).debites).toBe(10);
  });

  it('does not debit on one instance an answer the other served within 24 h', async () => {
    const org = await a.organisation({ acces: 'usage' });
    const first = await call(0, org.cle, '/essai/compter', 'même');
    const again = await call(1, org.cle, '/essai/compter', 'même');
    expect(first.json().credits.debites).toBe(1);
    expect(again.json().credits).toEqual({ debites: 0, restants: 499 });
    expect((await ledger(org.id)).debites).toBe(1);
  });

  it('debits once the same answer asked 20 times at once over both', async () => {
    const org = await a.organisation({ acces: 'usage' });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(i, org.cle, '/essai/compter', 'pareil')),
    );
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
    expect(results.map((r) => r.json().credits.debites).sort()).toEqual([...Array(19).fill(0), 1]);
    expect((await ledger(org.id)).debites).toBe(1);
  });

  it('holds quota_minute across both: at most 100 answers a minute, then 429 on either', async () => {
    const org = await a.organisation({ acces: 'usage', quota_minute: 100 });
    const results = [];
    // Waves of concurrent calls, alternating between the instances, until well past the quota.
    for (let wave = 0; wave < 6; wave++) {
      results.push(
        ...(await Promise.all(
          Array.from({ length: 30 }, (_, i) => call(i, org.cle, '/essai/gratuit', `q${wave}.${i}`)),
        )),
      );
    }
    const served = results.filter((r) => r.statusCode === 200);
    const refused = results.filter((r) => r.statusCode === 429);
    expect(served.length + refused.length).toBe(180);
    // Never more than the quota. The documented tolerance is on the other side (calls an instance took and did not
    // spend by the minute's end are lost to the other), and here both kept calling past the quota: none is lost.
    expect(served.length).toBe(100);
    expect(refused.every((r) => r.json().code === 'quota_minute' && Number(r.headers['retry-after']) > 0)).toBe(true);
    for (const r of served) expect(Number(r.headers['ratelimit-limit'])).toBe(100);
    // Both instances served and both refused.
    const onA = results.filter((_, i) => i % 2 === 0);
    expect(onA.some((r) => r.statusCode === 200) && onA.some((r) => r.statusCode === 429)).toBe(true);
    const onB = results.filter((_, i) => i % 2 === 1);
    expect(onB.some((r) => r.statusCode === 200) && onB.some((r) => r.statusCode === 429)).toBe(true);

    // The next minute opens a new window on both.
    clock += 60_000;
    try {
      const next = await Promise.all(Array.from({ length: 4 }, (_, i) => call(i, org.cle, '/essai/gratuit', `n${i}`)));
      expect(next.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    } finally {
      clock -= 60_000;
    }
  });
});

describe('keys and organisations changed on one instance', () => {
  /** B has the key and its organisation in memory (read after the announcement of the key's creation). */
  async function warm(cle: string) {
    expect((await call(1, cle, '/essai/gratuit', 'x')).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await call(1, cle, '/essai/gratuit', 'x')).statusCode).toBe(200);
  }

  /** Calls B every 20 ms until it refuses with `code`; the time it took. */
  async function refusedByB(cle: string, code: string): Promise<number> {
    const start = performance.now();
    for (;;) {
      const res = await call(1, cle, '/essai/gratuit', 'x');
      if (res.statusCode !== 200) {
        expect(res.json().code).toBe(code);
        return performance.now() - start;
      }
      if (performance.now() - start > 5000) throw new Error(`still served after 5 s (${code})`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('are refused by the other instance within 2 s: a revoked key, a suspended organisation, a removed scope', async () => {
    for (const [change, code] of [
      ['revocation', 'cle_invalide'],
      ['suspension', 'organisation_suspendue'],
      ['portee', 'portee_insuffisante'],
    ] as const) {
      const org = await a.organisation({ acces: 'usage' });
      await warm(org.cle);
      const changed =
        change === 'revocation'
          ? await a.admin('POST', `/cles/${org.cleId}/revocation`)
          : change === 'suspension'
            ? await a.admin('PATCH', `/organisations/${org.id}`, { statut: 'suspendue' })
            : await a.admin('PATCH', `/organisations/${org.id}`, { portees: ['urbanisme'] });
      expect(changed.status).toBe(200);
      // Announced: at once, well before the memory's own bound.
      expect(await refusedByB(org.cle, code), change).toBeLessThan(MEMORY_MS / 4);
    }
  });

  it('are refused within 2 s even when the database’s announcement is lost', async () => {
    const org = await a.organisation({ acces: 'usage' });
    await warm(org.cle);
    // A change nobody announces (the trigger off): only the memory's bound makes it seen.
    await a.db.query('ALTER TABLE cles DISABLE TRIGGER cles_acces');
    try {
      await a.db.query('UPDATE cles SET revoquee_le = now() WHERE id = $1', [org.cleId]);
      // B answers from memory, without a round trip: the key is still let in for a moment…
      expect((await call(1, org.cle, '/essai/gratuit', 'x')).statusCode).toBe(200);
      // …but never for longer than the bound.
      expect(await refusedByB(org.cle, 'cle_invalide')).toBeLessThan(MEMORY_MS);
    } finally {
      await a.db.query('ALTER TABLE cles ENABLE TRIGGER cles_acces');
    }
  });
});

describe('the credits left, as every answer says them', () => {
  /** The `restants` of a free call to instance `i % 2`. */
  const restants = async (i: number, cle: string) =>
    (await call(i, cle, '/essai/gratuit', 'x')).json().credits.restants;

  it('include the last debit in the very next answer of the same instance, for every key of the organisation', async () => {
    const org = await a.organisation({ acces: 'usage' });
    const autre = (await a.admin('POST', `/organisations/${org.id}/cles`, { mode: 'live' })).body.cle as string;
    // Both keys' balances in memory first: a debit must not leave either behind, nor a read in flight meanwhile.
    await restants(0, org.cle);
    await restants(0, autre);
    for (let n = 0; n < 30; n += 1) {
      const debited = await call(0, org.cle, '/essai/compter', `texte ${n}`);
      expect(debited.json().credits.debites).toBe(1);
      const left = debited.json().credits.restants;
      expect(await restants(0, n % 2 === 0 ? org.cle : autre), `round ${n}`).toBe(left);
      // A pause now and then lets the memory's background reads start before the next debit ends.
      if (n % 5 === 4) await new Promise((resolve) => setTimeout(resolve, BALANCE_MEMORY_MS / 2 + 10));
    }
  });

  it('include another instance’s debit within its bound of under a second', async () => {
    const org = await a.organisation({ acces: 'usage' });
    const before = await restants(1, org.cle);
    const debited = await call(0, org.cle, '/essai/compter', 'ailleurs');
    const left = debited.json().credits.restants;
    expect(left).toBe(before - 1);
    const start = performance.now();
    while ((await restants(1, org.cle)) !== left) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(performance.now() - start).toBeLessThan(1000);
  });
});

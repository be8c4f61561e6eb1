import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccounts } from '../../domain/platform/accounts.ts';
import { createTestDb } from '../support/db.ts';

// The api as its own process (api/main.ts, the multi-machine path), killed without warning during bursts of debited
// reads: the ledger must hold every debit of an answer the client received, and nothing for an answer it did not.

const MAIN = path.resolve('api/main.ts');
const CONCURRENCY = 16;
const PER_ROUND = 240;

interface Api {
  url: string;
  child: ChildProcess;
}

/** Starts the api on the test's database; resolves once it listens. */
function startApi(databaseUrl: string): Promise<Api> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1' };
  env.LOG_LEVEL = 'silent';
  delete env.TEMPORAL_ADDRESS;
  delete env.ADMIN_TOKEN;
  const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`api not listening after 30 s: ${out}`)), 30_000);
    const read = (chunk: Buffer) => {
      out += chunk.toString();
      const url = /API à l’écoute sur (\S+)/.exec(out)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve({ url, child });
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`api exited (${code}) before listening: ${out}`));
    });
  });
}

function stopped(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));
}

/** What the client got for one request: an answer (status, request id, credits debited), or a cut connection. */
interface Outcome {
  surface: number;
  status?: number;
  requete?: string;
  debites?: number;
}

async function ask(api: Api, cle: string, surface: number): Promise<Outcome> {
  try {
    const res = await fetch(`${api.url}/api/v1/fiscal/taxe-amenagement`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cle}`, 'content-type': 'application/json' },
      body: JSON.stringify({ insee: '33234', surface_taxable_creee_m2: surface }),
    });
    // Received means the whole body: an answer cut halfway is no answer.
    await res.text();
    return {
      surface,
      status: res.status,
      requete: res.headers.get('svc-requete') ?? undefined,
      debites: Number(res.headers.get('svc-credits-debites') ?? 0),
    };
  } catch {
    return { surface };
  }
}

/** Sends `surfaces` with CONCURRENCY requests in flight; kills the api once `killAfter` answers have arrived. */
async function burst(api: Api, cle: string, surfaces: number[], killAfter = Infinity): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let next = 0;
  let answered = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < surfaces.length) {
        const outcome = await ask(api, cle, surfaces[next++]);
        outcomes.push(outcome);
        if (outcome.status && ++answered === killAfter) api.child.kill('SIGKILL');
      }
    }),
  );
  return outcomes;
}

let db: Awaited<ReturnType<typeof createTestDb>>;
let api: Api | undefined;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  if (api) {
    api.child.kill('SIGKILL');
    await stopped(api.child);
  }
  await db?.drop();
});

async function debitRows(organisationId: string): Promise<string[]> {
  const { rows } = await db.db.query(
    `SELECT requete FROM mouvements WHERE organisation_id = $1 AND genre = 'debit' ORDER BY id`,
    [organisationId],
  );
  return rows.map((r) => r.requete);
}

describe('killing the api during bursts of debited reads', () => {
  it('loses no served debit and debits nothing unserved, at three kill points', async () => {
    const accounts = createAccounts(db.db, { quotaMinute: 100_000 });
    api = await startApi(db.url);
    for (const [round, killAfter] of [30, 90, 170].entries()) {
      const org = await accounts.createOrganisation({ nom: `Rafale ${round}`, acces: 'usage' });
      const { cle } = await accounts.createKey(org.id, { mode: 'live' });
      // Distinct requests, each answer priced 1 credit (500 free credits: all of them can be paid).
      const surfaces = Array.from({ length: PER_ROUND }, (_, i) => 20 + i);
      const first = await burst(api, cle, surfaces, killAfter);
      await stopped(api.child);

      const answers = first.filter((o) => o.status !== undefined);
      const cut = first.filter((o) => o.status === undefined);
      expect(answers.every((o) => o.status === 200 && o.debites === 1)).toBe(true);
      expect(answers.length).toBeGreaterThanOrEqual(killAfter);
      expect(cut.length, 'the kill cut the burst').toBeGreaterThan(0);
      const rows = await debitRows(org.id);
      // Every answer the client received is debited, once, under its request id.
      const received = new Set(answers.map((o) => o.requete));
      for (const o of answers)
        expect(
          rows.filter((r) => r === o.requete),
          o.requete,
        ).toHaveLength(1);
      // The other debits are of requests the kill cut while in flight (committed, the answer not yet sent): never
      // more than were in flight.
      const unsent = rows.filter((r) => !received.has(r));
      expect(unsent.length).toBeLessThanOrEqual(CONCURRENCY);

      // The client asks again what it got no answer to: what was debited already is served free (the identical
      // answer within 24 h), the rest is debited now. Each answer the client holds was paid exactly once.
      api = await startApi(db.url);
      const retried = await burst(
        api,
        cle,
        cut.map((o) => o.surface),
      );
      expect(retried.every((o) => o.status === 200)).toBe(true);
      expect(retried.filter((o) => o.debites === 0)).toHaveLength(unsent.length);
      const all = await debitRows(org.id);
      expect(all).toHaveLength(PER_ROUND);
      expect(new Set(all).size).toBe(PER_ROUND);

      // The ledger balances: its last row says what the movements add up to.
      const { rows: balance } = await db.db.query(
        `SELECT (SELECT sum(credits)::int FROM mouvements WHERE organisation_id = $1) AS somme,
                (SELECT restants::int FROM svc_solde($1, NULL)) AS restants`,
        [org.id],
      );
      expect(balance[0]).toEqual({ somme: 500 - PER_ROUND, restants: 500 - PER_ROUND });
    }
  }, 120_000);
});

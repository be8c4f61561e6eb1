import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResumeRecalibrage } from '../../activities/modeles.ts';
import { createTestDb } from '../support/db.ts';
import { createRuntime } from '../support/runtime.ts';

// A DVF import, run as a user runs it, asks Temporal to measure the models again; the worker runs the backtests and
// the sheets of GET /modeles change. Real sales: Hendaye 2019-2023 and the Abzac sample of ../shared/data.

const HENDAYE = path.resolve('../shared/data/dvf/dvf_api_2019-2023_64260_hendaye_maisons_appartements.csv');
const ABZAC = path.resolve('../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const hasData = existsSync(HENDAYE) && existsSync(ABZAC);
const SKIP = hasData ? '' : ' (skipped: ../shared/data/dvf absent)';

let t: Awaited<ReturnType<typeof createTestDb>>;
let runtime: Awaited<ReturnType<typeof createRuntime>>;
let dir: string;

beforeAll(async () => {
  if (!hasData) return;
  t = await createTestDb();
  runtime = await createRuntime();
  await runtime.startWorker(t.db, null);
  dir = await mkdtemp(path.join(tmpdir(), 'svc-recalibrage-'));
}, 120_000);
afterAll(async () => {
  await runtime?.close();
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** `npm run import -- dvf <fichier>` against this test's database, with or without a Temporal address. */
async function importer(fichier: string, temporal: boolean): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: t.url, DATA_DIR: dir };
  delete env.TEMPORAL_ADDRESS;
  if (temporal) Object.assign(env, { TEMPORAL_ADDRESS: runtime.address, TEMPORAL_TASK_QUEUE: runtime.taskQueue });
  const run = await promisify(execFile)(process.execPath, ['scripts/import.ts', 'dvf', fichier], { env });
  return run.stdout;
}

const mesures = async () =>
  (
    await t.db.query<{ modele: string; n: number; mesure_le: Date }>(
      `SELECT modele, count(*)::int AS n, max(mesure_le) AS mesure_le FROM modeles_mesures WHERE dataset = 'live'
        GROUP BY modele ORDER BY modele`,
    )
  ).rows;

describe.skipIf(!hasData)(`the recalibration after each DVF import${SKIP}`, () => {
  let id: string;

  it('without Temporal, the import says to run npm run modeles and measures nothing itself', async () => {
    const sortie = await importer(ABZAC, false);
    expect(sortie).toMatch(/TEMPORAL_ADDRESS non défini.*npm run modeles/);
    expect(await mesures()).toEqual([]);
  }, 120_000);

  it('with Temporal, the import starts recalibrerModeles, whose worker writes the sheets', async () => {
    const debut = new Date();
    const sortie = await importer(HENDAYE, true);
    const m = /recalibrage demandé à Temporal \(workflow (recalibrer-modeles-live-[0-9a-f]+),/.exec(sortie);
    expect(m, sortie).not.toBeNull();
    id = m![1];
    const resume = (await runtime.client.workflow.getHandle(id).result()) as ResumeRecalibrage;
    expect(resume.dataset).toBe('live');
    // Hendaye's 2023 sales estimated from 2019-2022; the range's coverage measured on the control half.
    expect(resume.estimation.ventes_estimees).toBeGreaterThan(100);
    expect(resume.estimation.couverture_pct).toBeGreaterThan(60);
    expect(resume.estimation.couverture_pct).toBeLessThan(95);
    expect(resume.bareme_prix.mesures).toBeGreaterThan(0);
    // No audit imported: the travaux sheet has no figure, and says why.
    expect(resume.travaux.mesures).toBe(0);
    const lignes = await mesures();
    expect(lignes.map((l) => l.modele)).toEqual(['bareme_prix', 'estimation']);
    for (const l of lignes) {
      expect(l.mesure_le.getTime()).toBeGreaterThanOrEqual(debut.getTime() - 1000);
      expect(l.mesure_le.toISOString()).toBe(resume.mesure_le);
    }
    const { rows } = await t.db.query<{ texte: string }>(
      `SELECT texte FROM modeles_limites WHERE dataset = 'live' AND modele = 'travaux'`,
    );
    expect(rows.map((r) => r.texte).join(' ')).toMatch(/Aucun audit énergétique importé/);
  }, 300_000);

  it('the same sales imported again ask for the same run: one recalibration per version of the data', async () => {
    const handle = runtime.client.workflow.getHandle(id);
    const avant = await handle.describe();
    const sortie = await importer(HENDAYE, true);
    expect(sortie).toContain(`déjà demandé (workflow ${id})`);
    const apres = await handle.describe();
    expect(apres.runId).toBe(avant.runId);
    expect(apres.status.name).toBe('COMPLETED');
  }, 120_000);
});

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importDvf } from '../../domain/dvf/import.ts';
import { editionFraiche } from '../../domain/jeux/lac.ts';
import { createFolderStorage } from '../../lib/storage.ts';
import { SCHEDULE_EDITIONS, planifierEditions } from '../../lib/temporal.ts';
import { createTestDb } from '../support/db.ts';
import { createRuntime } from '../support/runtime.ts';

// The editions built as the service builds them: by the Temporal workflow (daily Schedule, after imports) on a real
// worker, and by hand with `npm run export -- <jeu>`, on the real DVF sample of Abzac.

const ABZAC = path.resolve('../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const hasData = existsSync(ABZAC);
const SKIP = hasData ? '' : ' (skipped: ../shared/data/dvf absent)';

let t: Awaited<ReturnType<typeof createTestDb>>;
let runtime: Awaited<ReturnType<typeof createRuntime>>;
let dir: string;

beforeAll(async () => {
  if (!hasData) return;
  t = await createTestDb();
  runtime = await createRuntime();
  dir = await mkdtemp(path.join(tmpdir(), 'svc-exports-wf-'));
  const files = { storage: createFolderStorage(path.join(dir, 'fichiers')), secret: 'x', baseUrl: null, linkTtlS: 60 };
  await runtime.startWorker(t.db, null, undefined, files, { dossier: path.join(dir, 'lac') });
  await importDvf(t.db, ABZAC);
}, 120_000);
afterAll(async () => {
  await runtime?.client.schedule
    .getHandle(`${SCHEDULE_EDITIONS}-${runtime.taskQueue}`)
    .delete()
    .catch(() => {});
  await runtime?.close();
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const editions = async () =>
  (
    await t.db.query<{ jeu: string; format: string; statut: string; lignes: number; sha256: string; cle: string }>(
      `SELECT jeu, format, statut, lignes::int AS lignes, sha256, cle_donnees AS cle FROM exports_editions
        WHERE perimetre = 'contrat' ORDER BY jeu, format`,
    )
  ).rows;

describe.skipIf(!hasData)(`editions built by Temporal and by hand${SKIP}`, () => {
  it('the workflow builds each dataset asked, lists the one with rows and holds back the empty one', async () => {
    const resultat = await runtime.client.workflow.execute('construireEditions', {
      workflowId: `editions-${runtime.taskQueue}`,
      taskQueue: runtime.taskQueue,
      args: [{ jeux: ['dvf_adresse', 'audits', 'tuiles'], perimetres: ['contrat'] }],
    });
    expect(resultat.echecs).toEqual([]);
    expect(resultat.editions.map((e: any) => `${e.jeu} ${e.statut}`)).toEqual([
      'dvf_adresse listee',
      'audits retenue',
      'tuiles non_produite',
    ]);
    const rows = await editions();
    expect(rows.map((r) => `${r.jeu} ${r.format} ${r.statut}`)).toEqual([
      'audits csv.gz retenue',
      'audits parquet retenue',
      'dvf_adresse csv.gz listee',
      'dvf_adresse parquet listee',
    ]);
    // The stored file is the one recorded.
    const parquet = rows.find((r) => r.jeu === 'dvf_adresse' && r.format === 'parquet')!;
    const bytes = await readFile(path.join(dir, 'fichiers', ...parquet.cle.split('/')));
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(parquet.sha256);
    // Then the lake of the large datasets, which agreger_jeu reads while it is fresh: the sales' two, built.
    const lac = new Map(resultat.lac.map((x: { jeu: string; lignes: number | null }) => [x.jeu, x.lignes]));
    expect(lac.get('mutations')).toBe(50);
    expect(lac.get('dvf')).toBeGreaterThan(50);
    for (const jeu of ['dvf', 'mutations']) expect(await editionFraiche(t.db, jeu, 'live'), jeu).not.toBeNull();
  }, 120_000);

  it('the daily Schedule is created once, then brought up to date', async () => {
    const options = { taskQueue: runtime.taskQueue, scheduleId: `${SCHEDULE_EDITIONS}-${runtime.taskQueue}` };
    expect(await planifierEditions(runtime.client, options)).toBe('cree');
    expect(await planifierEditions(runtime.client, options)).toBe('mis_a_jour');
    const description = await runtime.client.schedule.getHandle(options.scheduleId).describe();
    expect(description.action.type).toBe('startWorkflow');
    expect((description.action as any).workflowType).toBe('construireEditions');
    expect(description.spec.timezone).toBe('Europe/Paris');
  });

  it('a live import asks Temporal for the editions, which the worker builds', async () => {
    await t.db.query('DELETE FROM exports_editions');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: t.url,
      DATA_DIR: dir,
      TEMPORAL_ADDRESS: runtime.address,
      TEMPORAL_TASK_QUEUE: runtime.taskQueue,
    };
    const run = await promisify(execFile)(process.execPath, ['scripts/import.ts', 'dvf', ABZAC], { env });
    const id = /Exports : éditions dvf_adresse, barometre, communes demandées à Temporal \(workflow (\S+),/.exec(
      run.stdout,
    )?.[1];
    expect(id, run.stdout).toBe(`exports-editions-apres-import-dvf-${runtime.taskQueue}`);
    const resultat = await runtime.client.workflow.getHandle(id!).result();
    expect(resultat.echecs).toEqual([]);
    const dvf = resultat.editions.find((e: any) => e.jeu === 'dvf_adresse');
    expect(dvf).toMatchObject({ perimetre: 'contrat', statut: 'listee', lignes: 50 });
    expect((await editions()).filter((r) => r.statut === 'listee').map((r) => `${r.jeu} ${r.format}`)).toContain(
      'dvf_adresse parquet',
    );
  }, 300_000);

  it('npm run export -- dvf_adresse builds it by hand and says so', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: t.url, DATA_DIR: dir };
    const run = await promisify(execFile)(process.execPath, ['scripts/export.ts', 'dvf_adresse', 'tuiles'], { env });
    expect(run.stdout).toMatch(/dvf_adresse \d{4}-\d{2}-\d{2} \(contrat\) : listee, 50 lignes/);
    expect(run.stdout).toMatch(/tuiles : non produit/);
    expect(run.stdout).toMatch(/parquet : \d+ octets, sha256 [0-9a-f]{64}/);
    const refus = await promisify(execFile)(process.execPath, ['scripts/export.ts', 'inconnu'], { env }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect((refus as { code: number }).code).toBe(1);
    expect((refus as { stderr: string }).stderr).toMatch(/jeu inconnu : inconnu/);
  });
});

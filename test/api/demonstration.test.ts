import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { createDb, type Queryable } from '../../db/client.ts';
import type { Operation, Services } from '../../domain/catalogue.ts';
import { faitsAdresse } from '../../domain/dpe/faits.ts';
import { ventes, ventesAdresse, ventesMutation, ventesParcelle } from '../../domain/dvf/operations.ts';
import { societesCiviles } from '../../domain/entreprises/societes-civiles.ts';
import { ImportError } from '../../domain/import/source.ts';
import { forgetServedSource, SOURCE_DEMONSTRATION } from '../../domain/qualite.ts';
import { clearDemonstration, liveData, loadSandbox, TABLES_DEMONSTRATION } from '../../domain/sandbox/load.ts';
import { documentsUrbanisme, urbanismeAdresse } from '../../domain/urbanisme/operations.ts';
import { permisAdresse, permisParcelle } from '../../domain/urbanisme/permis.ts';
import { containsPoint, distanceToGeometryM, type Geometry, type ZoneGeometry } from '../../lib/geometrie.ts';
import { loadConfig } from '../../lib/config.ts';
import { createCursors } from '../../lib/cursor.ts';
import { createOutboundHttp } from '../../lib/outbound-http.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { etalab, HEADER } from '../unit/dvf/fixtures.ts';

// The generated territory loaded as the live data of the embedded default: every `qualite.source` a live key is
// served says it is fictitious, the sandbox is served as it is, and the first real import takes it away.

/** Every `source` of a `qualite` block anywhere in a response: top level, items, groups. */
function sourcesQualite(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(sourcesQualite);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, v]) => [
    ...(key === 'qualite' && v !== null && typeof v === 'object' && 'source' in v ? [String(v.source)] : []),
    ...sourcesQualite(v),
  ]);
}

async function compte(db: Queryable, dataset: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TABLES_DEMONSTRATION) {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE dataset = $1`, [
      dataset,
    ]);
    out[table] = rows[0].n;
  }
  return out;
}

let t: TestApp;
let live: string;
let test: string;
let avantChargement: Awaited<ReturnType<typeof liveData>>;

interface Appel {
  operation: Operation<any, any>;
  params: Record<string, string>;
}
/** One call per operation and path, over keys that have data in the generated territory. */
let appels: Record<string, Appel>;
/** A number of the territory with a prescription surface over it and an easement near it, not over it. */
let sousPrescription: string;

async function adresseSousPrescription(db: Queryable): Promise<string> {
  const { rows: surfaces } = await db.query<{ geometrie: ZoneGeometry }>(
    `SELECT geometrie FROM surcharges_urbanisme WHERE dataset = 'live' AND nature = 'prescription' AND forme = 'surface'`,
  );
  const { rows: assiettes } = await db.query<{ geometrie: Geometry }>(
    `SELECT geometrie FROM sup_assiettes WHERE dataset = 'live'`,
  );
  const { rows: numeros } = await db.query<{ cle_ban: string; lat: number; lon: number }>(
    `SELECT cle_ban, lat, lon FROM adresses WHERE dataset = 'live' AND type = 'numero' ORDER BY cle_ban`,
  );
  const trouve = numeros.find(
    (a) =>
      surfaces.some((s) => containsPoint(s.geometrie, a.lon, a.lat)) &&
      assiettes.some((s) => {
        const d = distanceToGeometryM(s.geometrie, a.lon, a.lat);
        return d > 5 && d < 150;
      }),
  );
  if (!trouve) throw new Error('aucun numéro du territoire généré sous une prescription et près d’une servitude');
  return trouve.cle_ban;
}

/** The URL of a call: path parameters in the path, the others in the query string. */
function url({ operation, params }: Appel): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (!operation.path.includes(`{${k}}`)) query.set(k, v);
  const chemin = operation.path.replace(/\{(\w+)\}/g, (_: string, k: string) => encodeURIComponent(params[k]));
  return query.size > 0 ? `${chemin}?${query}` : chemin;
}

beforeAll(async () => {
  t = await createTestApp();
  avantChargement = await liveData(t.db);
  await loadSandbox(t.db, { dataset: 'sandbox' });
  await loadSandbox(t.db, { dataset: 'live' });
  live = (await t.organisation()).cle;
  test = (await t.organisation({}, { mode: 'test' })).cle;
  const un = async (sql: string, params: unknown[] = []) => {
    const { rows } = await t.db.query<{ v: string }>(sql, params);
    if (!rows[0]) throw new Error(`rien dans le territoire généré : ${sql}`);
    return rows[0].v;
  };
  const mutation = await un(
    `SELECT id_mutation AS v FROM dvf_mutations WHERE dataset = 'live' AND cle_ban IS NOT NULL AND millesime >= 2021
      ORDER BY id_mutation LIMIT 1`,
  );
  const deLaMutation = (colonne: string) =>
    un(`SELECT ${colonne} AS v FROM dvf_mutations WHERE dataset = 'live' AND id_mutation = $1`, [mutation]);
  sousPrescription = await adresseSousPrescription(t.db);
  appels = {
    ventes: { operation: ventes, params: { insee: '33234', limite: '50' } },
    ventes_mutation: { operation: ventesMutation, params: { id_mutation: mutation } },
    ventes_adresse: { operation: ventesAdresse, params: { cle_ban: await deLaMutation('cle_ban') } },
    ventes_parcelle: { operation: ventesParcelle, params: { id_parcelle: await deLaMutation('parcelles[1]') } },
    // A number with a DPE and sales: the dpe, ventes, ilot and commune groups each carry a block.
    faits_adresse: {
      operation: faitsAdresse,
      params: {
        cle_ban: await un(
          `SELECT d.cle_ban AS v FROM dpe d
            WHERE d.dataset = 'live'
              AND EXISTS (SELECT 1 FROM dvf_mutations m WHERE m.dataset = 'live' AND m.cle_ban = d.cle_ban)
            ORDER BY d.cle_ban LIMIT 1`,
        ),
      },
    },
    societes_civiles: {
      operation: societesCiviles,
      params: {
        cle_ban: await un(
          `SELECT e.cle_ban AS v FROM etablissements e
             JOIN unites_legales u ON u.dataset = e.dataset AND u.siren = e.siren
            WHERE e.dataset = 'live' AND u.societe_civile AND e.cle_ban IS NOT NULL
            ORDER BY e.cle_ban LIMIT 1`,
        ),
      },
    },
    urbanisme_adresse: { operation: urbanismeAdresse, params: { cle_ban: sousPrescription } },
    documents_urbanisme: { operation: documentsUrbanisme, params: { insee: '33234' } },
    permis_adresse: {
      operation: permisAdresse,
      params: {
        cle_ban: await un(
          `SELECT cle_ban AS v FROM permis WHERE dataset = 'live' AND cle_ban IS NOT NULL ORDER BY cle_ban LIMIT 1`,
        ),
      },
    },
    permis_parcelle: {
      operation: permisParcelle,
      params: {
        id_parcelle: await un(
          `SELECT parcelles[1] AS v FROM permis WHERE dataset = 'live' AND cardinality(parcelles) > 0
            ORDER BY numero LIMIT 1`,
        ),
      },
    },
  };
}, 300_000);

afterAll(async () => {
  await t?.close();
});

describe('the demonstration territory in the live data', () => {
  it('is loaded only into empty live data, and said to be there', async () => {
    expect(avantChargement).toBe('vide');
    expect(await liveData(t.db)).toBe('demonstration');
  });

  it('labels every qualite.source served to a live key, at every depth', async () => {
    for (const [nom, appel] of Object.entries(appels)) {
      const res = await t.call('GET', url(appel), live);
      expect(res.statusCode, `${nom} ${res.body}`).toBe(200);
      const sources = sourcesQualite(res.json());
      expect(sources.length, nom).toBeGreaterThan(0);
      expect(new Set(sources), nom).toEqual(new Set([SOURCE_DEMONSTRATION]));
      if (nom === 'ventes') expect(sources).toHaveLength(res.json().donnees.length);
      if (nom === 'faits_adresse') expect(sources.length).toBeGreaterThanOrEqual(4);
    }
  });

  it('leaves the sandbox dataset as it is: real source names, none labelled', async () => {
    // These operations have no sandbox (403 to a pk_test_ key): their handlers are read with a sandbox caller.
    const services: Services = {
      db: t.db,
      outbound: createOutboundHttp({ allowLoopback: false }),
      cursors: createCursors('demonstration'),
      now: () => new Date(),
    };
    const caller = { organisationId: 'org', cleId: 'cle', compteId: null, sandbox: true, portees: [] };
    for (const [nom, appel] of Object.entries(appels)) {
      const http = await t.call('GET', url(appel), test);
      expect(http.statusCode, nom).toBe(403);
      expect(sourcesQualite(http.json()), nom).toEqual([]);
      const sortie = await appel.operation.handler(appel.operation.input.parse(appel.params), {
        caller,
        requestId: 'req_demonstration',
        signal: new AbortController().signal,
        services,
      });
      const sources = sourcesQualite(sortie);
      expect(sources.length, nom).toBeGreaterThan(0);
      expect(sources, nom).not.toContain(SOURCE_DEMONSTRATION);
    }
  });
});

describe('urbanism on the demonstration territory', () => {
  it('answers an address with its zone, a prescription over it and an easement near it, and its commune', async () => {
    const res = await t.call('GET', `/adresses/${sousPrescription}/urbanisme`, live);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.statut.code).toBe('zonage_publie');
    expect(body.zones[0]).toMatchObject({
      type_document: expect.stringMatching(/^PLUi?$/),
      lecture: expect.any(Object),
    });
    expect(body.prescriptions).toContainEqual(expect.objectContaining({ forme: 'surface', distance_m: null }));
    expect(body.servitudes.some((s: { distance_m: number }) => s.distance_m > 5 && s.distance_m < 150)).toBe(true);
    expect(body.source).toBe(SOURCE_DEMONSTRATION);
    const commune = (await t.call('GET', `/communes/${body.adresse.insee}/urbanisme`, live)).json();
    expect(commune.statut.code).toBe('documents_publies');
    // Its rules document and their reading come with the territory (domain/sandbox/parts/reglements.ts).
    expect(commune.zones.length).toBeGreaterThan(0);
    expect(commune.documents[0]).toMatchObject({ en_vigueur: true, lecture: { zones_lues: commune.zones.length } });
    for (const z of commune.zones) expect(z.lecture).toMatchObject({ etat: 'lue', regles: 5 });
    expect(commune.servitudes.map((s: { categorie: string }) => s.categorie).sort()).toEqual(['AC1', 'I4', 'PM1']);
  });
});

describe('the first real import', () => {
  let dir: string;
  let sandboxAvant: Record<string, number>;
  let sortie: string;
  let avant: { donnees: unknown[] };

  beforeAll(async () => {
    sandboxAvant = await compte(t.db, 'sandbox');
    // An answer of the demonstration, kept in the running app's memory for the operation's cache duration.
    avant = (await t.call('GET', '/ventes?insee=33234', live)).json();
    dir = await mkdtemp(path.join(tmpdir(), 'svc-demonstration-'));
    const fichier = path.join(dir, 'dvf-abzac.csv');
    const lignes = [
      etalab({ id: '2022-REEL-1', type: 'Maison', surface: '100', valeur: '250000' }),
      etalab({ id: '2022-REEL-2', type: 'Appartement', surface: '50', valeur: '150000', date: '2022-06-01' }),
    ];
    await writeFile(fichier, `${HEADER}\n${lignes.join('\n')}\n`);
    // The importers' CLI, as a user runs it, against this test's database.
    const run = await promisify(execFile)(process.execPath, ['scripts/import.ts', 'dvf', fichier], {
      env: { ...process.env, DATABASE_URL: t.databaseUrl, DATA_DIR: dir },
    });
    sortie = run.stdout;
  }, 120_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('removes the demonstration rows first, and says so', async () => {
    expect(sortie).toContain('Données de démonstration retirées des données live');
    expect(await liveData(t.db)).toBe('reelles');
    const { rows } = await t.db.query(`SELECT id_mutation FROM dvf_mutations WHERE dataset = 'live' ORDER BY 1`);
    expect(rows.map((r) => r.id_mutation)).toEqual(['2022-REEL-1', '2022-REEL-2']);
    // The demonstration's vintages were dropped whole: the real one was loaded into a partition of its own.
    const { rows: partitions } = await t.db.query(
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'dvf_mutations'::regclass AND c.relname LIKE 'dvf_mutations_live_%'`,
    );
    expect(partitions.map((p) => p.relname)).toEqual(['dvf_mutations_live_2022']);
    const restes = await compte(t.db, 'live');
    for (const table of TABLES_DEMONSTRATION.filter((x) => !x.startsWith('dvf_'))) expect(restes[table], table).toBe(0);
    // The administrative split is real data: kept.
    const { rows: communes } = await t.db.query(`SELECT count(*)::int AS n FROM communes WHERE dataset = 'live'`);
    expect(communes[0].n).toBeGreaterThan(30_000);
    expect(await compte(t.db, 'sandbox')).toEqual(sandboxAvant);
  });

  it('is seen by a running server within seconds: no answer kept from the demonstration is served again', async () => {
    expect(avant.donnees.length).toBeGreaterThan(0);
    expect(new Set(sourcesQualite(avant))).toEqual(new Set([SOURCE_DEMONSTRATION]));
    // What the running app knew of the live data expires after a few seconds; forgotten here at once.
    forgetServedSource(t.db);
    // The same request: Latresne has no real sale yet.
    const res = await t.call('GET', '/ventes?insee=33234', live);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().donnees).toEqual([]);
    expect(sourcesQualite(res.json())).not.toContain(SOURCE_DEMONSTRATION);
  });

  it('leaves no label: a server started after it serves the real source', async () => {
    // A new pool and a new app: what `npm start` serves after the import, without this app's caches.
    const db = createDb(t.databaseUrl, 2);
    const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' });
    const app = await buildApp({ config, db });
    try {
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/ventes?insee=33001',
        headers: { authorization: `Bearer ${live}` },
      });
      expect(res.statusCode, res.body).toBe(200);
      const sources = sourcesQualite(res.json());
      expect(sources).toHaveLength(2);
      expect(new Set(sources)).toEqual(new Set(['DVF (DGFiP, Etalab)']));
    } finally {
      await app.close();
      await db.end();
    }
  });

  it('is never followed by the demonstration again', async () => {
    expect(await clearDemonstration(t.db)).toBe(false);
    await expect(loadSandbox(t.db, { dataset: 'live' })).rejects.toThrow(ImportError);
    expect(await liveData(t.db)).toBe('reelles');
  });
});

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { banSource, importBan } from '../../../domain/adresses/import-ban.ts';
import type { Queryable } from '../../../db/client.ts';
import { rechercher, resoudreAdresse, resoudreAdresseInverse, scorer } from '../../../domain/adresses/resoudre.ts';
import { analyserRequete } from '../../../domain/adresses/requete.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';

// ---------------------------------------------------------------------------------------------------------------------
// A BAN fixture in the official format: Latresne (33234) and Abzac (33001), Gironde.
// ---------------------------------------------------------------------------------------------------------------------

const HEADER =
  'id;id_fantoir;numero;rep;nom_voie;code_postal;code_insee;nom_commune;code_insee_ancienne_commune;nom_ancienne_commune;x;y;lon;lat;type_position;alias;nom_ld;libelle_acheminement;nom_afnor;source_position;source_nom_voie;certification_commune;cad_parcelles';

interface Row {
  id: string;
  numero: number | string;
  rep?: string;
  voie: string;
  cp?: string;
  insee?: string;
  commune?: string;
  lat: number | string;
  lon: number | string;
  position?: string;
  ld?: string;
  certifie?: boolean;
  parcelles?: string[];
}

function line(r: Row): string {
  const insee = r.insee ?? r.id.slice(0, 5);
  const commune = r.commune ?? (insee === '33234' ? 'Latresne' : 'Abzac');
  const cp = r.cp ?? (insee === '33234' ? '33360' : '33230');
  const fantoir = `${insee}_${r.id.split('_')[1]?.toUpperCase() ?? ''}`;
  const afnor = r.voie.normalize('NFD').replace(/\p{M}/gu, '').toUpperCase();
  return [
    r.id,
    fantoir,
    r.numero,
    r.rep ?? '',
    r.voie,
    cp,
    insee,
    commune,
    '',
    '',
    '430000.12',
    '6412000.34',
    r.lon,
    r.lat,
    r.position ?? 'entrée',
    '',
    r.ld ?? '',
    commune.toUpperCase(),
    afnor,
    'commune',
    'commune',
    r.certifie === undefined ? '' : r.certifie ? '1' : '0',
    (r.parcelles ?? []).join('|'),
  ].join(';');
}

const LIBERTE = '33234_0160';
const ROWS: Row[] = [
  // Rue de la Liberté, Latresne: numbers every ~15 m going north-east.
  { id: `${LIBERTE}_00001`, numero: 1, voie: 'Rue de la Liberté', lat: 44.7801, lon: -0.495, certifie: true },
  { id: `${LIBERTE}_00003`, numero: 3, voie: 'Rue de la Liberté', lat: 44.7802, lon: -0.4948, certifie: true },
  { id: `${LIBERTE}_00010`, numero: 10, voie: 'Rue de la Liberté', lat: 44.7803, lon: -0.4946, certifie: false },
  {
    id: `${LIBERTE}_00012`,
    numero: 12,
    voie: 'Rue de la Liberté',
    lat: 44.7804,
    lon: -0.4944,
    certifie: true,
    parcelles: ['332340000A0123', '332340000A0124'],
  },
  {
    id: `${LIBERTE}_00012_bis`,
    numero: 12,
    rep: 'bis',
    voie: 'Rue de la Liberté',
    lat: 44.78042,
    lon: -0.49436,
    certifie: true,
    parcelles: ['332340000A0125'],
  },
  { id: `${LIBERTE}_00014`, numero: 14, voie: 'Rue de la Liberté', lat: 44.7805, lon: -0.4942, position: 'bâtiment' },
  { id: `${LIBERTE}_00016`, numero: 16, voie: 'Rue de la Liberté', lat: 44.7806, lon: -0.494, position: 'parcelle' },
  // Avenue de la Libération: looks like Liberté to trigrams.
  { id: '33234_0040_00001', numero: 1, voie: 'Avenue de la Libération', lat: 44.783, lon: -0.49 },
  { id: '33234_0040_00004', numero: 4, voie: 'Avenue de la Libération', lat: 44.7832, lon: -0.4897 },
  { id: '33234_0040_00012', numero: 12, voie: 'Avenue de la Libération', lat: 44.7835, lon: -0.4893 },
  // Route de Cénac through the lieu-dit Les Écus.
  { id: '33234_0300_00020', numero: 20, voie: 'Route de Cénac', ld: 'Les Écus', lat: 44.776, lon: -0.488 },
  { id: '33234_0300_00022', numero: 22, voie: 'Route de Cénac', ld: 'Les Écus', lat: 44.7762, lon: -0.4878 },
  { id: '33234_0300_00031', numero: 31, voie: 'Route de Cénac', lat: 44.7741, lon: -0.4851 },
  // Numbers on a lieu-dit: its name is the street name, no separate place.
  { id: '33234_b012_00002', numero: 2, voie: 'Mélac', ld: 'Mélac', lat: 44.785, lon: -0.5, position: 'segment' },
  { id: '33234_b012_00004', numero: 4, voie: 'Mélac', ld: 'Mélac', lat: 44.7853, lon: -0.5004 },
  { id: '33234_0120_00005', numero: 5, voie: "Chemin du Port de l'Homme", lat: 44.7871, lon: -0.4991 },
  { id: '33234_0120_00007', numero: 7, voie: "Chemin du Port de l'Homme", lat: 44.7874, lon: -0.4995 },
  // Abzac.
  { id: '33001_0105_00002', numero: 2, voie: 'Rue du Petreau', lat: 45.0141, lon: -0.1241 },
  { id: '33001_0105_00004', numero: 4, voie: 'Rue du Petreau', lat: 45.0143, lon: -0.1239 },
  { id: '33001_0105_00006', numero: 6, voie: 'Rue du Petreau', lat: 45.0145, lon: -0.1237 },
  { id: '33001_0160_00012', numero: 12, voie: 'Rue de la Liberté', lat: 45.0152, lon: -0.129, certifie: true },
  { id: '33001_0160_00014', numero: 14, voie: 'Rue de la Liberté', lat: 45.0154, lon: -0.1292 },
  { id: '33001_b012_00006_ter', numero: 6, rep: 'ter', voie: 'Barraud', lat: 45.0223, lon: -0.1499 },
  { id: '33001_b012_00008', numero: 8, voie: 'Barraud', lat: 45.0225, lon: -0.1501, parcelles: ['33001000AC0495'] },
];

/** Lines that must be rejected, with the reason expected. */
const BAD: Array<{ text: string; motif: RegExp }> = [
  {
    text: line({ id: '33234_0160_00018', numero: 18, voie: 'Rue de la Liberté', lat: '', lon: '' }),
    motif: /coordonnées invalides/,
  },
  {
    text: line({ id: '33234_0160_00020', numero: 20, voie: 'Rue de la Liberté', lat: '144.78', lon: '-0.49' }),
    motif: /coordonnées invalides/,
  },
  {
    text: line({
      id: '33234_0160_00022',
      numero: 22,
      voie: 'Rue de la Liberté',
      insee: '3323X',
      lat: 44.78,
      lon: -0.49,
    }),
    motif: /code INSEE invalide/,
  },
  {
    text: line({ id: '', numero: 24, voie: 'Rue de la Liberté', insee: '33234', lat: 44.78, lon: -0.49 }),
    motif: /id absent/,
  },
  { text: `${LIBERTE}_00026;33234_0160;26;;Rue de la Liberté;33360`, motif: /colonnes au lieu de 23/ },
  // The same key twice: the first line wins.
  { text: line({ ...ROWS[0], lat: 44.7, lon: -0.4 }), motif: /id en double \(33234_0160_00001, déjà ligne 2\)/ },
];

const QUOTED = `33234_0500_00003;33234_0500;3;;"Allée des Pins; Est";33360;33234;Latresne;;;;;-0.4975;44.7815;entrée;;;LATRESNE;ALLEE DES PINS EST;commune;commune;1;`;

function csv(rows: Row[], extra: string[] = []): string {
  return [HEADER, ...rows.map(line), ...extra].join('\n') + '\n';
}

let dir: string;
let t: TestApp;
let fixture: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ban-'));
  fixture = path.join(dir, 'adresses-33.csv');
  await writeFile(fixture, csv(ROWS, [...BAD.map((b) => b.text), QUOTED]));
  t = await createTestApp({ operations: [resoudreAdresse, resoudreAdresseInverse] });
});

afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

async function snapshot(dataset = 'live') {
  const { rows } = await t.db.query(
    `SELECT xmin::text AS version, * FROM adresses WHERE dataset = $1 ORDER BY cle_ban`,
    [dataset],
  );
  return rows;
}

// ---------------------------------------------------------------------------------------------------------------------
// Import
// ---------------------------------------------------------------------------------------------------------------------

describe('the BAN importer', () => {
  it('reads the file, rejects bad lines with their reason and line number, and derives streets, places, communes', async () => {
    const progress: number[] = [];
    const report = await banSource.run(t.db, fixture, { sandbox: false, onProgress: ({ lus }) => progress.push(lus) });
    const expectedRead = ROWS.length + BAD.length + 1;
    expect(report.lus).toBe(expectedRead);
    expect(report.gardes).toBe(ROWS.length + 1);
    expect(report.rejetes).toHaveLength(BAD.length);
    BAD.forEach((bad, i) => {
      expect(report.rejetes[i].ligne).toBe(ROWS.length + 2 + i);
      expect(report.rejetes[i].motif).toMatch(bad.motif);
    });
    expect(progress.at(-1)).toBe(expectedRead);

    const rows = await snapshot();
    const byKey = new Map(rows.map((r) => [r.cle_ban, r]));
    const twelve = byKey.get(`${LIBERTE}_00012`);
    expect(twelve).toMatchObject({
      type: 'numero',
      numero: 12,
      suffixe: null,
      voie: 'Rue de la Liberté',
      code_voie: '0160',
      code_postal: '33360',
      insee: '33234',
      commune: 'Latresne',
      libelle: '12 Rue de la Liberté 33360 Latresne',
      parcelles: ['332340000A0123', '332340000A0124'],
      certification: true,
      type_position: 'entrée',
      source: 'ban',
    });
    expect(byKey.get(`${LIBERTE}_00012_bis`)).toMatchObject({
      suffixe: 'bis',
      libelle: '12 bis Rue de la Liberté 33360 Latresne',
    });
    expect(byKey.get(`${LIBERTE}_00016`)).toMatchObject({ parcelles: [], certification: null });
    expect(byKey.get('33234_0500_00003')).toMatchObject({ voie: 'Allée des Pins; Est', certification: true });

    // The street: its key, the median of its 7 numbers (the 4th of each coordinate), no parcels.
    expect(byKey.get(LIBERTE)).toMatchObject({
      type: 'voie',
      numero: null,
      libelle: 'Rue de la Liberté 33360 Latresne',
      lat: 44.7804,
      lon: -0.4944,
      parcelles: null,
      certification: null,
    });
    // One place for Les Écus; none for Mélac, whose numbers already carry it as their street.
    const places = rows.filter((r) => r.type === 'lieu_dit');
    expect(places.map((r) => r.libelle)).toEqual(['Les Écus 33360 Latresne']);
    expect(places[0]).toMatchObject({ lieu_dit: 'Les Écus', insee: '33234' });
    expect([places[0].lat, places[0].lon].map((x: number) => x.toFixed(6))).toEqual(['44.776100', '-0.487900']);
    expect(byKey.get('33234_b012')).toMatchObject({ type: 'voie', code_voie: 'B012', libelle: 'Mélac 33360 Latresne' });
    expect(byKey.get('33234')).toMatchObject({ type: 'commune', libelle: '33360 Latresne', code_postal: '33360' });
    expect(byKey.get('33001')).toMatchObject({ type: 'commune', libelle: '33230 Abzac' });
    expect(rows.filter((r) => r.type === 'numero')).toHaveLength(ROWS.length + 1);
    expect(rows.filter((r) => r.type === 'voie')).toHaveLength(9);
    expect(report.details[0]).toMatch(/^numéros +: 25 \(25 ajoutés, 0 modifiés, 0 inchangés\)/);
  });

  it('changes nothing when the same file is imported again, plain or gzipped', async () => {
    const before = await snapshot();
    const again = await importBan(t.db, fixture);
    expect(again.details.slice(0, 4).every((d) => /\(\d+ ajoutés, 0 modifiés/.test(d) && /\(0 ajoutés/.test(d))).toBe(
      true,
    );
    expect(again.details[4]).toMatch(/^supprimés : 0 /);
    const gz = `${fixture}.gz`;
    await writeFile(gz, gzipSync(await readFile(fixture)));
    const zipped = await importBan(t.db, gz);
    expect(zipped.gardes).toBe(again.gardes);
    // xmin is the transaction that last wrote a row: unchanged, nothing was rewritten.
    expect(await snapshot()).toEqual(before);
  });

  it('updates what moved and deletes what the file no longer has, in the communes it covers only', async () => {
    await t.db.query(
      `INSERT INTO adresses (dataset, cle_ban, type, insee, commune, libelle, lat, lon, source)
       VALUES ('live', '33234_9999_00001', 'numero', '33234', 'Latresne', 'Adresse DPE', 44.78, -0.49, 'dpe')`,
    );
    const file = path.join(dir, 'adresses-33-v2.csv');
    const moved = ROWS.filter((r) => r.id !== `${LIBERTE}_00016`).map((r) =>
      r.id === `${LIBERTE}_00014` ? { ...r, lat: 44.78055 } : r,
    );
    await writeFile(file, csv(moved.filter((r) => !r.id.startsWith('33001'))));
    const report = await importBan(t.db, file, { dataset: 'live' });
    expect(report.details[0]).toMatch(/1 modifiés/);
    const rows = new Map((await snapshot()).map((r) => [r.cle_ban, r]));
    expect(rows.has(`${LIBERTE}_00016`)).toBe(false);
    expect(rows.has('33234_0500_00003')).toBe(false);
    expect(rows.get(`${LIBERTE}_00014`)!.lat).toBe(44.78055);
    // The median of the 6 numbers left.
    expect(rows.get(LIBERTE)!.lat).toBeCloseTo((44.7803 + 44.7804) / 2, 9);
    // Abzac is not in this file; the DPE row is not the importer's.
    expect(rows.has('33001_0105_00002')).toBe(true);
    expect(rows.has('33234_9999_00001')).toBe(true);
    await t.db.query(`DELETE FROM adresses WHERE source = 'dpe'`);
    // Back to the full file for the searches below.
    await importBan(t.db, fixture);
  });

  it('refuses a file that is not a BAN export, and a missing file', async () => {
    const other = path.join(dir, 'autre.csv');
    await writeFile(other, 'a,b,c\n1,2,3\n');
    await expect(importBan(t.db, other)).rejects.toThrow(ImportError);
    await expect(importBan(t.db, other)).rejects.toThrow(/colonne\(s\) id, numero/);
    await expect(importBan(t.db, path.join(dir, 'absent.csv'))).rejects.toThrow(/introuvable/);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// resoudre_adresse through HTTP
// ---------------------------------------------------------------------------------------------------------------------

describe('resoudre_adresse', () => {
  let live: string;
  let test: string;

  beforeAll(async () => {
    // The sandbox holds the fixture without Abzac's Rue du Petreau: what only live has must not leak to test keys.
    const sandboxFile = path.join(dir, 'sandbox.csv');
    await writeFile(sandboxFile, csv(ROWS.filter((r) => !r.id.startsWith('33001_0105'))));
    await importBan(t.db, sandboxFile, { dataset: 'sandbox' });
    live = (await t.organisation()).cle;
    test = (await t.organisation({}, { mode: 'test' })).cle;
  });

  async function get(url: string, cle = live) {
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/v1${url}`,
      headers: { authorization: `Bearer ${cle}` },
    });
    return { status: res.statusCode, body: res.json() };
  }
  const recherche = (params: Record<string, string>, cle?: string) =>
    get(`/adresses/recherche?${new URLSearchParams(params)}`, cle);
  const inverse = (params: Record<string, string>, cle?: string) =>
    get(`/adresses/inverse?${new URLSearchParams(params)}`, cle);

  it('finds the number from an accent-less query, then despite a typo, with a score above 0.5', async () => {
    for (const q of [
      '12 rue de la liberte latresne',
      '12 rue de la libetré latresne',
      '12 RUE DE LA LIBERTÉ, LATRESNE',
    ]) {
      const { status, body } = await recherche({ q });
      expect(status, q).toBe(200);
      expect(body.mode).toBe('recherche');
      const [first] = body.candidats;
      expect(first, q).toMatchObject({
        cle_ban: `${LIBERTE}_00012`,
        type: 'numero',
        numero: 12,
        suffixe: null,
        voie: 'Rue de la Liberté',
        code_postal: '33360',
        insee: '33234',
        commune: 'Latresne',
        ancienne_commune: null,
        lat: 44.7804,
        lon: -0.4944,
        parcelles: ['332340000A0123', '332340000A0124'],
        distance_m: null,
        certification: true,
        type_position: 'entrée',
      });
      expect(first.score, q).toBeGreaterThan(0.5);
      expect(first.score).toBeLessThanOrEqual(1);
      expect(Object.keys(first).sort()).toEqual(
        [
          'cle_ban',
          'libelle',
          'type',
          'numero',
          'suffixe',
          'voie',
          'code_postal',
          'insee',
          'commune',
          'ancienne_commune',
          'lat',
          'lon',
          'type_position',
          'parcelles',
          'score',
          'distance_m',
          'certification',
        ].sort(),
      );
      const scores = body.candidats.map((c: { score: number }) => c.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
      for (const score of scores) expect(score).toBe(Math.round(score * 1000) / 1000);
    }
  });

  it('is as fast right after an import as later: nothing left for the search to read through, one round trip', async () => {
    // A GIN pending list is read through by every search until a VACUUM: the import merged it (import-ban.ts).
    for (const index of ['adresses_recherche', 'adresses_recherche_mots']) {
      const { rows } = await t.db.query<{ n: number }>('SELECT gin_clean_pending_list($1::regclass)::int AS n', [
        index,
      ]);
      expect(rows[0].n, index).toBe(0);
    }
    let allersRetours = 0;
    const query = (...args: unknown[]) => {
      allersRetours++;
      return (t.db.query as (...a: unknown[]) => Promise<unknown>)(...args);
    };
    const compte = { query } as unknown as Queryable;
    const [premier] = await rechercher(compte, 'live', '12 RUE DE LA LIBERTE 33360 LATRESNE', null, 5);
    expect(premier.cle_ban).toBe(`${LIBERTE}_00012`);
    expect(allersRetours).toBe(1);
  });

  it('prefers the exact repetition index, and keeps the number of another street below', async () => {
    const { body } = await recherche({ q: '12 bis rue de la liberte latresne' });
    expect(body.candidats[0].cle_ban).toBe(`${LIBERTE}_00012_bis`);
    expect(body.candidats[1].cle_ban).toBe(`${LIBERTE}_00012`);
    const { body: plain } = await recherche({ q: '12 av de la liberation latresne' });
    expect(plain.candidats[0].cle_ban).toBe('33234_0040_00012');
  });

  it('filters on code_postal', async () => {
    const both = await recherche({ q: '12 rue de la liberte' });
    expect(both.body.candidats.map((c: { cle_ban: string }) => c.cle_ban)).toEqual(
      expect.arrayContaining([`${LIBERTE}_00012`, '33001_0160_00012']),
    );
    const abzac = await recherche({ q: '12 rue de la liberte', code_postal: '33230' });
    expect(abzac.body.candidats[0]).toMatchObject({ cle_ban: '33001_0160_00012', commune: 'Abzac' });
    expect(abzac.body.candidats.every((c: { code_postal: string }) => c.code_postal === '33230')).toBe(true);
  });

  it('serves streets, lieux-dits (without key) and communes', async () => {
    const street = await recherche({ q: 'rue du petrau abzac' });
    expect(street.body.candidats[0]).toMatchObject({
      cle_ban: '33001_0105',
      type: 'voie',
      numero: null,
      parcelles: null,
    });
    const place = await recherche({ q: 'les ecus latresne' });
    expect(place.body.candidats[0]).toMatchObject({
      cle_ban: null,
      type: 'lieu_dit',
      voie: null,
      libelle: 'Les Écus 33360 Latresne',
    });
    const number = await recherche({ q: '22 les ecus latresne' });
    expect(number.body.candidats[0]).toMatchObject({ cle_ban: '33234_0300_00022', voie: 'Route de Cénac' });
    const commune = await recherche({ q: 'latresne' });
    expect(commune.body.candidats[0]).toMatchObject({ cle_ban: '33234', type: 'commune', score: 1 });
    // A number the street does not have: the street itself, not another number.
    const missing = await recherche({ q: '99 rue du petreau abzac' });
    expect(missing.body.candidats[0]).toMatchObject({ cle_ban: '33001_0105', type: 'voie' });
  });

  it('is described in the OpenAPI document as one tool with two paths', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const search = doc.paths['/api/v1/adresses/recherche'].get;
    const reverse = doc.paths['/api/v1/adresses/inverse'].get;
    expect([search.operationId, reverse.operationId]).toEqual(['resoudre_adresse', 'resoudre_adresse_inverse']);
    expect(search.parameters.map((p: { name: string }) => p.name)).toEqual(['q', 'code_postal', 'limite']);
    expect(
      reverse.parameters.filter((p: { required: boolean }) => p.required).map((p: { name: string }) => p.name),
    ).toEqual(['lat', 'lon']);
    expect(search['x-svc-credits']).toBe(0);
  });

  it('validates its parameters', async () => {
    expect((await recherche({ q: 'ab' })).status).toBe(400);
    expect((await recherche({ q: 'latresne', code_postal: '3336' })).status).toBe(400);
    expect((await recherche({ q: 'latresne', limite: '11' })).status).toBe(400);
    expect((await inverse({ lat: '44.78' })).status).toBe(400);
    expect((await inverse({ lat: '', lon: '-0.49' })).status).toBe(400);
    expect((await inverse({ lat: '91', lon: '-0.49' })).status).toBe(400);
    const { body } = await recherche({ q: 'rue de la liberte latresne', limite: '1' });
    expect(body.candidats).toHaveLength(1);
  });

  it('answers the reverse search nearest first, numbers before streets at equal distance', async () => {
    const { status, body } = await inverse({ lat: '44.78041', lon: '-0.49439', limite: '10' });
    expect(status).toBe(200);
    expect(body.mode).toBe('inverse');
    const [first, second, third] = body.candidats;
    expect(first).toMatchObject({ cle_ban: `${LIBERTE}_00012`, type: 'numero', distance_m: 1 });
    // The street's position is the median of its numbers, its 12: as near, after the number.
    expect(second).toMatchObject({ cle_ban: LIBERTE, type: 'voie', distance_m: 1 });
    expect(third).toMatchObject({ cle_ban: `${LIBERTE}_00012_bis`, distance_m: 3 });
    expect(first.score).toBeNull();
    const distances = body.candidats.map((c: { distance_m: number }) => c.distance_m);
    expect(distances.every((d: number) => Number.isInteger(d) && d <= 1000)).toBe(true);
    expect(distances).toEqual([...distances].sort((a, b) => a - b));
    expect(body.candidats).toHaveLength(10);
    expect(body.candidats.some((c: { type: string }) => c.type === 'commune')).toBe(false);
    // The street sits on its 12 (the median): same distance, the number comes first.
    const atStreet = await inverse({ lat: '44.7804', lon: '-0.4944', limite: '3' });
    expect(
      atStreet.body.candidats
        .slice(0, 2)
        .map((c: { cle_ban: string; distance_m: number }) => [c.cle_ban, c.distance_m]),
    ).toEqual([
      [`${LIBERTE}_00012`, 0],
      [LIBERTE, 0],
    ]);
    // Nothing within 1 km.
    expect((await inverse({ lat: '43.2965', lon: '5.3698' })).body.candidats).toEqual([]);
  });

  it('serves pk_test_ keys from the sandbox only, and refuses what lies outside it', async () => {
    const live12 = await recherche({ q: '4 rue du petreau abzac' });
    expect(live12.body.candidats[0].cle_ban).toBe('33001_0105_00004');
    // Abzac is in the sandbox, its Rue du Petreau only in live: other streets of Abzac at best.
    const sandbox = await recherche({ q: '4 rue du petreau abzac' }, test);
    expect(sandbox.status).toBe(200);
    expect(sandbox.body.candidats.length).toBeGreaterThan(0);
    expect(sandbox.body.candidats.some((c: { voie: string }) => c.voie === 'Rue du Petreau')).toBe(false);
    // Nothing found: an empty list for a postal code of the sandbox, a refusal without one.
    const empty = await recherche({ q: '4 rue du petreau', code_postal: '33230' }, test);
    expect(empty.status).toBe(200);
    expect(empty.body.candidats).toEqual([]);
    expect((await recherche({ q: '4 rue du petreau' }, test)).body.code).toBe('hors_bac_a_sable');
    const found = await recherche({ q: '12 rue de la libetré latresne' }, test);
    expect(found.body.candidats[0].cle_ban).toBe(`${LIBERTE}_00012`);

    const marseille = await recherche({ q: '10 la canebière marseille' }, test);
    expect(marseille.status).toBe(403);
    expect(marseille.body.code).toBe('hors_bac_a_sable');
    expect((await recherche({ q: 'la canebiere', code_postal: '13001' }, test)).body.code).toBe('hors_bac_a_sable');
    const nothing = await recherche({ q: 'impasse inexistante', code_postal: '33360' }, test);
    expect(nothing.status).toBe(200);
    expect(nothing.body.candidats).toEqual([]);

    const near = await inverse({ lat: '44.7804', lon: '-0.4944' }, test);
    expect(near.body.candidats[0].cle_ban).toBe(`${LIBERTE}_00012`);
    expect((await inverse({ lat: '44.7201', lon: '-0.5701' }, test)).body.candidats).toEqual([]);
    const far = await inverse({ lat: '43.2965', lon: '5.3698' }, test);
    expect(far.status).toBe(403);
    expect(far.body.code).toBe('hors_bac_a_sable');
  });
});

describe('query analysis and score', () => {
  it('reads the leading number and its repetition index, not a postal code nor a preposition', () => {
    expect(analyserRequete('12 bis rue X')).toMatchObject({ numero: 12, suffixe: 'bis', type: 'rue', mots: ['x'] });
    expect(analyserRequete('12b, rue X')).toMatchObject({ numero: 12, suffixe: 'b' });
    expect(analyserRequete('27 B BD DE CHARONNE')).toMatchObject({ numero: 27, suffixe: 'b', type: 'boulevard' });
    expect(analyserRequete('12 A RUE DE LA PAIX')).toMatchObject({ numero: 12, suffixe: 'a', type: 'rue' });
    expect(analyserRequete('12 R DE LA PAIX')).toMatchObject({ numero: 12, suffixe: null, type: 'rue' });
    expect(analyserRequete('3 a la ferme')).toMatchObject({ numero: 3, suffixe: null, mots: ['a', 'la', 'ferme'] });
    expect(analyserRequete('33360 Latresne')).toMatchObject({
      numero: null,
      codes: ['33360'],
      commune: { mots: ['latresne'], insee: ['33234'] },
    });
  });

  it('scores 1 for the same words and counts a swap of two letters as one typo', () => {
    const ligne = {
      type: 'numero' as const,
      numero: 12,
      suffixe: null,
      typeVoie: 'rue',
      noms: [['de', 'la', 'liberte']],
      insee: '33234',
      commune: 'Latresne',
      ancienne_commune_nom: null,
      code_postal: '33360',
    };
    expect(scorer(analyserRequete('12 Rue de la Liberté 33360 Latresne'), ligne)).toBe(1);
    const typo = scorer(analyserRequete('12 rue de la libetre latresne'), ligne);
    expect(typo).toBeGreaterThan(0.9);
    expect(scorer(analyserRequete('12 rue de la paix latresne'), ligne)).toBeLessThan(typo - 0.1);
  });
});

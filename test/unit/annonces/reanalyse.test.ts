import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importAnnonces } from '../../../domain/annonces/import.ts';
import { reanalyserCommunes } from '../../../domain/annonces/reanalyse.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { importLoyers } from '../../../domain/loyers/import.ts';
import { createTestDb } from '../../support/db.ts';
import { etalab, HEADER } from '../dvf/fixtures.ts';
import { annonceDuPortail, appartement, evenementsDe, fichierReleves } from './support.ts';

// An analysis is done again when what it reads of its commune changes: listings imported first through the real
// importer, then rents and DVF sales of some of their communes through theirs.

const MAINTENANT = new Date('2025-11-01T00:00:00Z');

let testDb: Awaited<ReturnType<typeof createTestDb>>;
let db: Db;
let dir: string;
/** Service ids by role. */
const ids: Record<string, string> = {};

/** The rent indicators of flats T1-T2, 2025 edition, as the publisher writes them. */
const LOYERS_T1_T2 = [
  '"id_zone";"INSEE_C";"LIBGEO";"EPCI";"DEP";"REG";"loypredm2";"lwr.IPm2";"upr.IPm2";"TYPPRED";"nbobs_com";"nbobs_mail";"R2_adj"',
  // Latresne, where two listings are online and one withdrawn.
  '"2042";"33234";"Latresne";"243301439";"33";"75";13,1;11,2;15,3;"commune";180;610;0,81',
  // Lormont, where no listing is.
  '"2042";"33249";"Lormont";"243300316";"33";"75";12,4;10,9;14,1;"commune";300;610;0,81',
].join('\r\n');

/** Flats sold in Abzac in 2024 (the DVF fixtures' commune), around 3 000 €/m². */
const DVF_ABZAC = [
  HEADER,
  ...[
    ['2024-1', '180000', '60'],
    ['2024-2', '150000', '50'],
    ['2024-3', '210000', '70'],
    ['2024-4', '165000', '55'],
    ['2024-5', '195000', '65'],
  ].map(([id, valeur, surface], i) =>
    etalab({
      id,
      date: `2024-0${i + 2}-10`,
      valeur,
      type: 'Appartement',
      surface,
      parcelle: `33001000AB000${i + 1}`,
    }),
  ),
].join('\n');

async function ecrire(nom: string, contenu: string): Promise<string> {
  const chemin = path.join(dir, nom);
  await writeFile(chemin, contenu);
  return chemin;
}

/** The `reanalyse` events of the journal after id `apres`, as [listing, count]. */
async function reanalyses(apres: number): Promise<Array<[string, number]>> {
  const { rows } = await db.query<{ annonce_id: string; n: number }>(
    `SELECT annonce_id, count(*)::int AS n FROM annonces_evenements
      WHERE dataset = 'live' AND genre = 'reanalyse' AND id > $1 GROUP BY annonce_id ORDER BY annonce_id`,
    [apres],
  );
  return rows.map((r) => [r.annonce_id, r.n]);
}

async function dernierEvenement(): Promise<number> {
  const { rows } = await db.query<{ id: number | null }>(
    `SELECT max(id) AS id FROM annonces_evenements WHERE dataset = 'live'`,
  );
  return Number(rows[0].id ?? 0);
}

const analyseDe = async (id: string) =>
  (await db.query(`SELECT resultat_analyse AS a FROM annonces WHERE id = $1`, [id])).rows[0].a;

beforeAll(async () => {
  testDb = await createTestDb();
  db = testDb.db;
  dir = await mkdtemp(path.join(tmpdir(), 'annonces-reanalyse-'));
  const latresne = { insee: '33234', code_postal: '33360', position: { lat: 44.7813, lon: -0.4933 } };
  const report = await importAnnonces(
    db,
    await fichierReleves(dir, 'annonces.jsonl', [
      // Latresne: a two-room flat online, another withdrawn, a house online.
      appartement({ id: 'L1', ...latresne }),
      appartement({ id: 'L2', ...latresne, prix: 250_000, surface: 45 }),
      { portail: 'portal_a', id: 'L2', vu_le: '2025-03-05T09:00:00Z', statut: 'withdrawn' },
      appartement({ id: 'L3', ...latresne, type: 'maison', pieces: 5, surface: 120, prix: 390_000 }),
      // Abzac: a flat online.
      appartement({
        id: 'A1',
        insee: '33001',
        code_postal: '33230',
        position: { lat: 45.01, lon: -0.13 },
        prix: 160_000,
        surface: 50,
      }),
      // Lille: a flat online, in none of the files that follow.
      appartement({ id: 'V1', insee: '59350', code_postal: '59000', position: { lat: 50.63, lon: 3.06 } }),
    ]),
    { dataset: 'live', maintenant: MAINTENANT },
  );
  expect(report.rejetes).toEqual([]);
  for (const role of ['L1', 'L2', 'L3', 'A1', 'V1']) ids[role] = (await annonceDuPortail(db, `portal_a:${role}`)).id;
}, 60_000);

afterAll(async () => {
  await testDb?.drop();
  await rm(dir, { recursive: true, force: true });
});

describe('after an import of rents', () => {
  let avant: number;
  let chemin: string;
  let details: string[];

  beforeAll(async () => {
    avant = await dernierEvenement();
    expect((await analyseDe(ids.L1)).loyer).toBeNull();
    chemin = await ecrire('pred-app12-mef-dhup-2025.csv', LOYERS_T1_T2);
    details = (await importLoyers(db, chemin)).details;
  });

  it('analyses again, once, only the active listings whose inputs changed', async () => {
    // L2 is withdrawn, L3 a house (the file has flats' rents), A1 and V1 in communes the file does not give.
    expect(await reanalyses(avant)).toEqual([[ids.L1, 1]]);
    const [evenement] = (await evenementsDe(db, ids.L1)).filter((e) => e.genre === 'reanalyse');
    // Without a price scale nor a rent the flat had no score; with the rent it has one.
    expect(evenement.avant).toMatchObject({ score: null });
    expect(evenement.apres.score).toEqual(expect.any(Number));
    const analyse = await analyseDe(ids.L1);
    expect(analyse.loyer).toMatchObject({ loyer_m2: 13.1, edition: 2025, mensuel: Math.round(13.1 * 40) });
    expect(analyse.score).toBe(evenement.apres.score);
    expect(details).toContain('annonces réanalysées : 1 (sur 2 annonces actives des communes concernées)');
  });

  it('writes no event when the same file is imported again', async () => {
    const depuis = await dernierEvenement();
    const again = await importLoyers(db, chemin);
    expect(await dernierEvenement()).toBe(depuis);
    expect(again.details).toContain('annonces réanalysées : 0 (sur 2 annonces actives des communes concernées)');
  });
});

describe('after an import of DVF sales', () => {
  let avant: number;
  let chemin: string;

  beforeAll(async () => {
    avant = await dernierEvenement();
    expect((await analyseDe(ids.A1)).reference_commune).toBeNull();
    chemin = await ecrire('dvf-abzac.csv', DVF_ABZAC);
  });

  it('analyses again the listings of the commune whose price scale it made, once', async () => {
    const report = await importDvf(db, chemin);
    expect(report.mutations.ajoutees).toBe(5);
    expect(await reanalyses(avant)).toEqual([[ids.A1, 1]]);
    const analyse = await analyseDe(ids.A1);
    expect(analyse.reference_commune).toMatchObject({ millesime: 2024, prix_m2: expect.any(Number) });
    expect(analyse.ecart_reference_pct).toEqual(expect.any(Number));
    // Every active listing was looked at (the date of the data moves every commune's 3-year change).
    expect(report.reanalyse).toEqual({ examinees: 4, analysees: 1, evenements: 1 });
  });

  it('writes no event when the same file is imported again', async () => {
    const depuis = await dernierEvenement();
    const again = await importDvf(db, chemin);
    expect(again.mutations.ajoutees).toBe(0);
    expect(await dernierEvenement()).toBe(depuis);
    expect(again.reanalyse).toEqual({ examinees: 4, analysees: 0, evenements: 0 });
  });
});

describe('two passes at once', () => {
  it('write one reanalyse for one change', async () => {
    const avant = await dernierEvenement();
    // The rent of Latresne's flats revised, then its listings analysed again by two passes together (two imports
    // that both changed what they read).
    await db.query(`UPDATE loyers_communes SET loyer_m2 = 14.2 WHERE insee = '33234'`);
    const passes = await Promise.all([
      reanalyserCommunes(db, 'live', ['33234']),
      reanalyserCommunes(db, 'live', ['33234']),
    ]);
    expect(passes.map((p) => p.analysees).sort()).toEqual([0, 1]);
    expect(await reanalyses(avant)).toEqual([[ids.L1, 1]]);
    expect((await analyseDe(ids.L1)).loyer.loyer_m2).toBe(14.2);
  });
});

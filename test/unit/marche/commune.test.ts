import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { reconstruireDpeCommunes } from '../../../domain/marche/agregats.ts';
import { reconstruireDerives } from '../../../domain/marche/derives.ts';
import { marcheOperations } from '../../../domain/marche/operations.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';

const ABZAC = path.resolve('../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const hasAbzac = existsSync(ABZAC);
const SKIP = hasAbzac ? '' : ' (skipped: ../shared/data/dvf absent)';

let t: TestApp;
let org: { id: string; cle: string };

/** Rents, zones and DPE of Abzac and Latresne as the importers write them (values of the real files where known). */
beforeAll(async () => {
  t = await createTestApp({ operations: marcheOperations as Operation[] });
  org = await t.organisation({ acces: 'usage' });
  if (hasAbzac) await importDvf(t.db, ABZAC);
  await t.db.query(
    `INSERT INTO loyers_communes (dataset, insee, type_logement, edition, commune, loyer_m2, loyer_m2_bas,
                                  loyer_m2_haut, niveau_prediction, nb_obs_commune, nb_obs_maille)
     VALUES ('live', '33001', 'maison', 2024, 'Abzac', 9.6, 8.1, 11.4, 'maille', 3, 900),
            ('live', '33234', 'appartement', 2018, 'Latresne', 12.087, 10.5, 13.9, 'commune', 60, 800)`,
  );
  await t.db.query(
    `INSERT INTO zonage_abc (dataset, insee, en_vigueur_le, zone, commune)
     VALUES ('live', '33001', '2024-07-05', 'C', 'Abzac'), ('live', '33234', '2024-07-05', 'B1', 'Latresne')`,
  );
  // Four DPE in Abzac, one of them G, and a fifth (F) replaced by a newer D: 1 passoire out of 4 current ones.
  const dpe = [
    ['2333E0000001A', 'G', null],
    ['2333E0000002A', 'C', null],
    ['2333E0000003A', 'D', null],
    ['2333E0000004A', 'F', null],
    ['2333E0000005A', 'D', '2333E0000004A'],
  ];
  for (const [numero, etiquette, remplace] of dpe) {
    await t.db.query(
      `INSERT INTO dpe (dataset, numero_dpe, format, rattachement_incertain, insee, etabli_le, fin_validite,
                        fin_validite_calculee, etiquette, numero_dpe_remplace)
       VALUES ('live', $1, 'csv_ademe', false, '33001', '2024-03-01', '2034-03-01', false, $2, $3)`,
      [numero, etiquette, remplace],
    );
  }
  await reconstruireDpeCommunes(t.db, 'live');
  // What the DPE, rent and zoning importers do after their import: the rankings' and comparisons' table.
  await reconstruireDerives(t.db, 'live');
});
afterAll(async () => {
  await t?.close();
});

const get = async (url: string) => {
  const res = await t.call('GET', url, org.cle);
  return { status: res.statusCode, body: res.json() };
};

describe('commune: the market sheet', () => {
  it.skipIf(!hasAbzac)(`Abzac: price, rent, yield, F/G share, zone, population${SKIP}`, async () => {
    const prix = (await get('/communes/33001/prix?type=maison')).body;
    const reference = prix.bareme.at(-1);
    const { status, body } = await get('/communes/33001');
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ insee: '33001', commune: 'Abzac', departement: '33', zone_abc: 'C' });
    expect(body.population).toBeGreaterThan(1000);
    expect(body.prix_m2.maison).toMatchObject({
      prix_m2: reference.prix_m2,
      provenance: 'mesure',
      n_ventes: reference.n_ventes,
      millesime: 2021,
    });
    expect(body.prix_m2.appartement).toBeNull();
    expect(body.loyer_m2.maison).toMatchObject({ loyer_m2: 9.6, nature: 'predit_maille' });
    expect(body.rendement_brut_pct.maison).toBe(Math.round(((9.6 * 12) / reference.prix_m2) * 1000) / 10);
    expect(body.rendement_brut_pct.appartement).toBeNull();
    expect(body).toMatchObject({ passoires_dpe_fg_pct: 25, dpe_n: 4 });
    expect(body.tendance_3_ans).toEqual({ evolution_pct: null, sens: null });
    expect(body.credits.debites).toBe(2);
  });

  it('says what is missing rather than inventing it (Strasbourg: no DVF, no rent, no DPE)', async () => {
    const { status, body } = await get('/communes/67482');
    expect(status).toBe(200);
    expect(body.prix_m2).toEqual({ appartement: null, maison: null });
    expect(body.limites.join(' ')).toMatch(/Alsace-Moselle/);
    expect(body.limites.join(' ')).toMatch(/loyer/);
  });

  it('answers 404 commune_introuvable for an unknown code and 400 for Paris as a whole', async () => {
    expect((await get('/communes/99999')).body.code).toBe('commune_introuvable');
    expect((await get('/communes/75056')).status).toBe(400);
  });
});

describe('comparer_communes', () => {
  it.skipIf(!hasAbzac)(
    `names the best per indicator and lists unknown codes, 1 credit per commune${SKIP}`,
    async () => {
      const { status, body } = await get('/communes/comparaison?insee=33234,33001,99999');
      expect(status, JSON.stringify(body)).toBe(200);
      expect(body.communes.map((c: { insee: string }) => c.insee)).toEqual(['33234', '33001']);
      expect(body.introuvables).toEqual(['99999']);
      // Latresne has no sale here: Abzac is the only one with a house price and an F/G share.
      expect(body.meilleure_par_indicateur).toMatchObject({
        prix_maison_le_plus_bas: '33001',
        prix_appartement_le_plus_bas: null,
        rendement_maison_le_plus_haut: '33001',
        passoires_les_moins_nombreuses: '33001',
        evolution_3_ans_la_plus_haute: null,
      });
      const abzac = body.communes[1];
      expect(abzac).toMatchObject({ zone_abc: 'C', passoires_dpe_fg_pct: 25, loyer_m2_predit: 9.6 });
      // Two components: yield of houses (rent × 12 / price, on 0-10 %) and the share of DPE not F or G.
      const rendement = abzac.rendement_brut_maison_pct;
      expect(abzac.score_attractivite).toBe(Math.round(((Math.min(100, rendement * 10) + 75) / 2) * 10) / 10);
      expect(body.communes[0]).toMatchObject({ zone_abc: 'B1', loyer_m2_predit: 12.087, prix_m2_appartement: null });
      expect(body.credits.debites).toBe(2);
    },
  );

  it('refuses fewer than 2 codes, and answers 404 when none is a commune', async () => {
    expect((await get('/communes/comparaison?insee=33001')).status).toBe(400);
    const aucune = await get('/communes/comparaison?insee=99998,99999');
    expect(aucune.status).toBe(404);
    expect(aucune.body.code).toBe('commune_introuvable');
  });
});

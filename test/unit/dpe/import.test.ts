import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importDpe, lireXml } from '../../../domain/dpe/import.ts';
import { createTestDb } from '../../support/db.ts';
import { appartementLatresne, csvAdeme } from './fixtures.ts';

const XML_DIR = path.resolve('../shared/data/dpe/open3cl_xml');
const hasXml = existsSync(XML_DIR);
const SKIP = hasXml ? '' : ' (skipped: ../shared/data/dpe/open3cl_xml absent)';
const AUJOURDHUI = '2026-11-21';

let testDb: Awaited<ReturnType<typeof createTestDb>>;
let db: Db;
let dir: string;

beforeAll(async () => {
  testDb = await createTestDb();
  db = testDb.db;
  dir = await mkdtemp(path.join(tmpdir(), 'dpe-import-'));
});
afterAll(async () => {
  await testDb?.drop();
  await rm(dir, { recursive: true, force: true });
});

async function ligne(numero: string, dataset = 'live') {
  const { rows } = await db.query(
    `SELECT *, to_char(etabli_le, 'YYYY-MM-DD') AS etabli, to_char(fin_validite, 'YYYY-MM-DD') AS fin
       FROM dpe WHERE dataset = $1 AND numero_dpe = $2`,
    [dataset, numero],
  );
  return rows[0];
}

describe('the observatory XML (six real DPE)', () => {
  it.skipIf(!hasXml)(`imports the folder, each DPE attached to its BAN key${SKIP}`, async () => {
    const report = await importDpe(db, XML_DIR, { aujourdhui: AUJOURDHUI });
    expect(report.format).toBe('xml');
    expect({ lus: report.lus, gardes: report.gardes, rejetes: report.rejetes }).toEqual({
      lus: 6,
      gardes: 6,
      rejetes: [],
    });
    expect(report.dpe).toEqual({ ajoutes: 6, modifies: 0, inchanges: 0 });

    // 2375E4029206L, Paris 11e, 2023: G / C, 746 kWh/m², 24 kg/m², 21.9 m², geocoded to 203 Rue du Faubourg Saint-Antoine.
    const paris = await ligne('2375E4029206L');
    expect(paris).toMatchObject({
      format: 'xml',
      cle_ban: '75111_3514_00203',
      etiquette: 'G',
      ges: 'C',
      conso_kwh_m2_an: 746,
      ges_kg_m2_an: 24,
      surface_m2: 21.9,
      etabli: '2023-11-24',
      // No end of validity in the XML: establishment + 10 years.
      fin: '2033-11-24',
      fin_validite_calculee: true,
      insee: '75111',
      code_postal: '75011',
      adresse: '203 Rue du Faubourg Saint-Antoine 75011 Paris',
      type_batiment: 'appartement',
      appartements: 19,
      periode_construction: 'avant 1948',
      annee_construction: 1945,
      chauffage_energie: 'Électricité',
      chauffage_installation: 'individuel',
      isolation_enveloppe: 'insuffisante',
      isolation_menuiseries: 'bonne',
      ventilation: 'Ventilation par ouverture des fenêtres',
      modele: 'DPE 3CL 2021 méthode logement',
      rattachement_incertain: false,
    });
    // ban_x 654691.23, ban_y 6861342.37 (Lambert-93) is the Faubourg Saint-Antoine near Faidherbe-Chaligny.
    expect(paris.lat).toBeCloseTo(48.8505, 3);
    expect(paris.lon).toBeCloseTo(2.3826, 3);

    // Besançon: the diagnostician typed « 24 Rue des deux Princesses », the observatory geocoded it to number 20.
    expect(await ligne('2325E0263102J')).toMatchObject({ cle_ban: '25056_1550_00020', rattachement_incertain: true });
    // Toulon: a BAN score of 0.35.
    expect(await ligne('2283E1034323X')).toMatchObject({ etiquette: 'C', ges: 'A', rattachement_incertain: true });
    expect(await ligne('2578E1899852K')).toMatchObject({ etiquette: 'C', ges: 'C', cle_ban: '78537_0960_00032' });
  });

  it.skipIf(!hasXml)(`changes nothing when imported again${SKIP}`, async () => {
    const before = await db.query(`SELECT numero_dpe, importe_le FROM dpe ORDER BY numero_dpe`);
    const report = await importDpe(db, XML_DIR, { aujourdhui: AUJOURDHUI });
    expect(report.dpe).toEqual({ ajoutes: 0, modifies: 0, inchanges: 6 });
    const after = await db.query(`SELECT numero_dpe, importe_le FROM dpe ORDER BY numero_dpe`);
    expect(after.rows).toEqual(before.rows);
    // A single file is a source too.
    const one = await importDpe(db, path.join(XML_DIR, '2375E4029206L.xml'), { aujourdhui: AUJOURDHUI });
    expect(one.dpe).toEqual({ ajoutes: 0, modifies: 0, inchanges: 1 });
    // The same DPE re-encoded in Latin-1 with its prolog saying so reads the same (« Besançon » included).
    const latin1 = path.join(dir, '2325E0263102J-latin1.xml');
    const texte = readFileSync(path.join(XML_DIR, '2325E0263102J.xml'), 'utf8');
    await writeFile(latin1, Buffer.from(`<?xml version="1.0" encoding="ISO-8859-1"?>\n${texte}`, 'latin1'));
    const latin = await importDpe(db, latin1, { aujourdhui: AUJOURDHUI });
    expect(latin.dpe).toEqual({ ajoutes: 0, modifies: 0, inchanges: 1 });
    expect((await ligne('2325E0263102J')).commune).toBe('Besançon');
  });

  it.skipIf(!hasXml)(`--sandbox writes the frozen dataset, apart from the live one${SKIP}`, async () => {
    await importDpe(db, path.join(XML_DIR, '2475E0800069X.xml'), { dataset: 'sandbox', aujourdhui: AUJOURDHUI });
    const { rows } = await db.query(`SELECT dataset, count(*)::int AS n FROM dpe GROUP BY dataset ORDER BY dataset`);
    expect(rows).toEqual([
      { dataset: 'live', n: 6 },
      { dataset: 'sandbox', n: 1 },
    ]);
  });

  it.skipIf(!hasXml)(`reads the dwelling's address only, never the owner's, and rejects with reasons${SKIP}`, () => {
    const real = readFileSync(path.join(XML_DIR, '2375E4029206L.xml'), 'utf8');
    // The observatory model has an owner block beside the dwelling's address; it must never be what is read.
    const withOwner = real
      .replace('<geolocalisation>', '<nom_proprietaire>Jeanne Martin</nom_proprietaire><geolocalisation>')
      .replace(
        '<adresse_bien>',
        '<adresse_proprietaire><ban_id>33063_9999_00001</ban_id><ban_label>1 Rue X 33000 Bordeaux</ban_label></adresse_proprietaire><adresse_bien>',
      );
    const row = lireXml(withOwner, AUJOURDHUI);
    expect(typeof row).toBe('object');
    expect(row).toMatchObject({
      cle_ban: '75111_3514_00203',
      adresse: '203 Rue du Faubourg Saint-Antoine 75011 Paris',
    });
    expect(JSON.stringify(row)).not.toMatch(/Jeanne|Martin|Bordeaux/);

    expect(lireXml(real.replace('<classe_bilan_dpe>G</classe_bilan_dpe>', ''), AUJOURDHUI)).toBe(
      '2375E4029206L : étiquette DPE absente',
    );
    expect(lireXml(real.replace(/<numero_dpe>[^<]*<\/numero_dpe>/, ''), AUJOURDHUI)).toBe('numéro de DPE absent');
    expect(
      lireXml(
        real.replace(
          '<date_etablissement_dpe>2023-11-24</date_etablissement_dpe>',
          '<date_etablissement_dpe>2023-02-30</date_etablissement_dpe>',
        ),
        AUJOURDHUI,
      ),
    ).toBe('2375E4029206L : date d’établissement invalide (2023-02-30)');
    expect(lireXml('<rapport><numero>1</numero></rapport>', AUJOURDHUI)).toMatch(/sans élément <dpe>/);
  });
});

describe('the ADEME open-data CSV', () => {
  it('imports the export (quoted fields, a line break inside a field), rejects rows with their reasons', async () => {
    const file = path.join(dir, 'dpe-v2-logements-existants.csv');
    await writeFile(
      file,
      csvAdeme([
        appartementLatresne({
          'N°DPE': '2633E0000001A',
          Date_établissement_DPE: '2026-01-10',
          Etiquette_DPE: 'F',
          Etiquette_GES: 'D',
          'Conso_5_usages_par_m²_é_primaire': 389.5,
          'Emission_GES_5_usages_par_m²': 52,
        }),
        appartementLatresne({ 'N°DPE': '2633E0000002B', Date_établissement_DPE: '2026-03-02', Etiquette_GES: 'B' }),
        appartementLatresne({ Date_établissement_DPE: '2026-03-02', Etiquette_DPE: 'C' }),
        appartementLatresne({ 'N°DPE': '2633E0000003C', Date_établissement_DPE: '2026-13-45', Etiquette_DPE: 'C' }),
        appartementLatresne({
          'N°DPE': '2633E0000004D',
          Date_établissement_DPE: '2026-08-01',
          Date_fin_validité_DPE: '2036-07-31',
          Etiquette_DPE: 'G',
          Etiquette_GES: 'E',
          Adresse_brute: '12 Route de Bordeaux\nrésidence « Les Pins », 2e étage',
          'N°_DPE_remplacé': '2633E0000001A',
        }),
      ]),
    );
    const report = await importDpe(db, file, { aujourdhui: AUJOURDHUI });
    expect(report.format).toBe('csv_ademe');
    expect({ lus: report.lus, gardes: report.gardes }).toEqual({ lus: 5, gardes: 2 });
    // Lines of the file (the header is line 1).
    expect(report.rejetes).toEqual([
      { ligne: 3, motif: '2633E0000002B : étiquette DPE absente' },
      { ligne: 4, motif: 'numéro de DPE absent' },
      { ligne: 5, motif: '2633E0000003C : date d’établissement invalide (2026-13-45)' },
    ]);
    expect(await ligne('2633E0000001A')).toMatchObject({
      format: 'csv_ademe',
      cle_ban: '33234_0160_00012',
      etiquette: 'F',
      ges: 'D',
      conso_kwh_m2_an: 389.5,
      ges_kg_m2_an: 52,
      fin: '2036-01-10',
      fin_validite_calculee: true,
      type_batiment: 'appartement',
      surface_immeuble_m2: 1200,
      rattachement_incertain: false,
    });
    const g = await ligne('2633E0000004D');
    expect(g).toMatchObject({
      etiquette: 'G',
      fin: '2036-07-31',
      fin_validite_calculee: false,
      numero_dpe_remplace: '2633E0000001A',
    });
    // Lambert-93 of the export, projected: Latresne, south-east of Bordeaux.
    expect(g.lat).toBeGreaterThan(44.7);
    expect(g.lat).toBeLessThan(44.85);
    expect(g.lon).toBeGreaterThan(-0.6);
    expect(g.lon).toBeLessThan(-0.4);

    const again = await importDpe(db, file, { aujourdhui: AUJOURDHUI });
    expect(again.dpe).toEqual({ ajoutes: 0, modifies: 0, inchanges: 2 });
  });

  it('reads the later snake_case edition, semicolon-separated, and folds audits into one row each', async () => {
    const dpe = path.join(dir, 'dpe03existant.csv');
    await writeFile(
      dpe,
      [
        'numero_dpe;date_etablissement_dpe;etiquette_dpe;etiquette_ges;identifiant_ban;code_insee_ban;type_batiment;surface_habitable_logement;conso_5_usages_par_m2_ep',
        '2633E0000009Z;2026-04-02;F;F;33234_0160_00014;33234;maison;92,5;402',
      ].join('\r\n'),
    );
    const r = await importDpe(db, dpe, { aujourdhui: AUJOURDHUI });
    expect({ lus: r.lus, gardes: r.gardes, format: r.format }).toEqual({ lus: 1, gardes: 1, format: 'csv_ademe' });
    expect(await ligne('2633E0000009Z')).toMatchObject({
      type_batiment: 'maison',
      surface_m2: 92.5,
      conso_kwh_m2_an: 402,
    });

    const audits = path.join(dir, 'audit-opendata.csv');
    const entete =
      'n_audit,id_etape,categorie_scenario,etape_travaux,date_etablissement_audit,date_fin_validite_audit,n_audit_remplace,numero_dpe,classe_bilan_dpe,cout_travaux,couts_cumules_travaux';
    await writeFile(
      audits,
      [
        entete,
        'A2633000001X,1,état initial,état initial,2026-04-20,2031-04-20,,2633E0000009Z,F,,',
        'A2633000001X,2,scénario principal en deux étapes,première étape,2026-04-20,2031-04-20,,2633E0000009Z,D,18000,18000',
        'A2633000001X,3,scénario principal en deux étapes,étape finale,2026-04-20,2031-04-20,,2633E0000009Z,B,21000,39000',
        ',4,état initial,état initial,2026-04-20,2031-04-20,,2633E0000009Z,F,,',
      ].join('\n'),
    );
    const a = await importDpe(db, audits);
    expect({ lus: a.lus, gardes: a.gardes, format: a.format }).toEqual({ lus: 4, gardes: 3, format: 'csv_audit' });
    expect(a.rejetes).toEqual([{ ligne: 5, motif: 'numéro d’audit absent' }]);
    expect(a.audits).toEqual({ ajoutes: 1, modifies: 0, inchanges: 0 });
    const { rows } = await db.query(
      `SELECT cle_ban, to_char(etabli_le, 'YYYY-MM-DD') AS etabli, cout_travaux_max, classe_initiale, classe_visee,
              pack_pre_vente, etapes FROM dpe_audits WHERE numero_audit = 'A2633000001X'`,
    );
    // The key of the audited DPE; a pack: the audit 18 days after its DPE.
    expect(rows[0]).toEqual({
      cle_ban: '33234_0160_00014',
      etabli: '2026-04-20',
      cout_travaux_max: 39000,
      classe_initiale: 'F',
      classe_visee: 'B',
      pack_pre_vente: true,
      etapes: 3,
    });
    const b = await importDpe(db, audits);
    expect(b.audits).toEqual({ ajoutes: 0, modifies: 0, inchanges: 1 });
  });

  it('says what it does not recognise', async () => {
    const file = path.join(dir, 'autre.csv');
    await writeFile(file, 'a,b,c\n1,2,3\n');
    await expect(importDpe(db, file)).rejects.toThrow(/En-tête non reconnu/);
    await expect(importDpe(db, path.join(dir, 'absent.csv'))).rejects.toThrow(/Introuvable/);
  });
});

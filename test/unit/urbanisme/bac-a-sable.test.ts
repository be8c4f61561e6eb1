import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importCadastre } from '../../../domain/cadastre/import.ts';
import { SANDBOX_COMMUNES } from '../../../domain/platform/sandbox.ts';
import { generateSandbox, SANDBOX_SEED, type SandboxFiles } from '../../../domain/sandbox/generate.ts';
import { COMMUNES, territoire } from '../../../domain/sandbox/territoire.ts';
import { importPaquetsGpu } from '../../../domain/urbanisme/paquet-gpu.ts';
import { situationUrbanisme } from '../../../domain/urbanisme/statut-communes.ts';
import { importSup } from '../../../domain/urbanisme/sup-import.ts';
import { findZoning } from '../../../domain/urbanisme/zonage.ts';
import { createTestDb } from '../../support/db.ts';

// The sandbox's planning packages, easements and cadastre, generated and read back through their importers.

let db: Db;
let drop: () => Promise<void>;
let dir: string;
let fichiers: SandboxFiles;

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'bac-urbanisme-'));
  fichiers = await generateSandbox(dir, { seed: SANDBOX_SEED });
});

afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

async function parCommune(sql: string): Promise<Record<string, unknown>> {
  const { rows } = await db.query<{ insee: string; v: unknown }>(sql);
  return Object.fromEntries(rows.map((r) => [r.insee, r.v]));
}

describe('sandbox packages', () => {
  it('imports a planning package per commune, in every encoding, without a rejected feature', async () => {
    expect(fichiers.gpu).toEqual([path.join(dir, 'gpu')]);
    const report = await importPaquetsGpu(db, fichiers.gpu, { dataset: 'sandbox' });
    // Per commune: 9 zones, 2 + 1 + 3 prescriptions, 1 + 1 information.
    expect(report).toMatchObject({ lus: 5 * 17, gardes: 5 * 17, rejetes: [] });
    const types = await parCommune(
      `SELECT c.insee, string_agg(DISTINCT s.nature || ':' || s.forme || ':' || s.type, ' ') AS v
         FROM surcharges_urbanisme s JOIN documents_urbanisme_communes c USING (dataset, idurba)
        WHERE s.dataset = 'sandbox' GROUP BY c.insee`,
    );
    for (const insee of ['33234', '33001', '75056', '59350', '67482']) {
      // The numeric TYPEPSC of the line layers (33234, 59350) read as two digits like the text ones.
      expect(types[insee], insee).toBe(
        'information:point:16 information:surface:16 prescription:ligne:15 prescription:point:07 prescription:surface:01 prescription:surface:05',
      );
    }
    // DBFs without .cpg (Abzac in Windows-1252, Lille in UTF-8) read without mojibake.
    const { rows } = await db.query(
      `SELECT DISTINCT libelle FROM surcharges_urbanisme WHERE dataset = 'sandbox' AND type = '07' ORDER BY 1`,
    );
    expect(rows).toEqual([
      {
        libelle:
          'Patrimoine bâti à protéger pour des motifs d’ordre culturel, historique, architectural (zonage fictif)',
      },
    ]);
    // The zone grid of each centre, in Lambert-93 and back: the centre is in the middle zone.
    for (const c of COMMUNES) {
      const zone = await findZoning(db, { lat: c.lat, lon: c.lon, dataset: 'sandbox' });
      expect(zone?.zone.code, c.insee).toBe(
        { '33234': 'UA', '33001': 'UA', '75111': 'UG', '59350': 'UCO', '67482': 'UA1' }[c.insee],
      );
    }
    for (const insee of SANDBOX_COMMUNES) {
      expect((await situationUrbanisme(db, 'sandbox', insee)).code, insee).toBe('documents_publies');
    }
    const again = await importPaquetsGpu(db, fichiers.gpu, { dataset: 'sandbox' });
    expect(again.details.filter((l) => /ajoutées/.test(l) && !/ 0 ajoutées, 0 modifiées/.test(l))).toEqual([]);
  });

  it('imports one easement of AC1, PM1 and I4 in every commune', async () => {
    const report = await importSup(db, fichiers.sup, { dataset: 'sandbox' });
    expect(report).toMatchObject({ rejetes: [] });
    expect(report.gardes).toBe(report.lus);
    const { rows } = await db.query(
      `SELECT a.categorie, a.forme, count(*)::int AS n, count(DISTINCT s.idsup)::int AS servitudes,
              count(DISTINCT l.idacte)::int AS actes, min(s.gestionnaire) AS gestionnaire
         FROM sup_assiettes a
         JOIN sup_servitudes s USING (dataset, lot, idsup)
         JOIN sup_servitudes_actes l USING (dataset, lot, idsup)
        WHERE a.dataset = 'sandbox' GROUP BY 1, 2 ORDER BY 1`,
    );
    expect(rows).toEqual([
      {
        categorie: 'AC1',
        forme: 'surface',
        n: 5,
        servitudes: 5,
        actes: 5,
        gestionnaire: 'Unité départementale de l’architecture et du patrimoine (fictive)',
      },
      {
        categorie: 'I4',
        forme: 'surface',
        n: 5,
        servitudes: 5,
        actes: 5,
        gestionnaire: 'Gestionnaire du réseau de transport d’électricité (fictif)',
      },
      {
        categorie: 'PM1',
        forme: 'surface',
        n: 5,
        servitudes: 5,
        actes: 5,
        gestionnaire: 'Direction départementale des territoires (fictive)',
      },
    ]);
    const { rows: generateurs } = await db.query(
      `SELECT categorie, forme FROM sup_generateurs WHERE dataset = 'sandbox' GROUP BY 1, 2 ORDER BY 1`,
    );
    expect(generateurs).toEqual([
      { categorie: 'AC1', forme: 'point' },
      { categorie: 'I4', forme: 'ligne' },
      { categorie: 'PM1', forme: 'surface' },
    ]);
  });

  it('imports the parcels the BAN numbers carry, and a building on each number', async () => {
    const report = await importCadastre(db, fichiers.cadastre, { dataset: 'sandbox' });
    expect(report).toMatchObject({ rejetes: [] });
    expect(report.gardes).toBe(report.lus);
    for (const c of COMMUNES) {
      const t = territoire(SANDBOX_SEED, c);
      const attendues = t.numeros.flatMap((n) => n.parcelles).sort();
      const { rows } = await db.query<{ id: string }>(
        `SELECT id FROM cadastre_parcelles WHERE dataset = 'sandbox' AND commune = $1 ORDER BY id`,
        [c.insee],
      );
      expect(rows.map((r) => r.id)).toEqual(attendues);
      const { rows: b } = await db.query(
        `SELECT count(*)::int AS n FROM cadastre_batiments WHERE dataset = 'sandbox' AND commune = $1`,
        [c.insee],
      );
      expect(b[0].n).toBe(t.numeros.length);
    }
    const { rows: sans } = await db.query(
      `SELECT count(*)::int AS n FROM cadastre_parcelles WHERE dataset = 'sandbox' AND contenance IS NULL`,
    );
    expect(sans[0].n).toBe(5);
  });
});

import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importDvf } from '../../../domain/dvf/import.ts';
import { backtestEstimation, type Backtest } from '../../../domain/estimation/backtest.ts';
import { demiLargeur } from '../../../domain/estimation/valeur.ts';
import { createTestDb } from '../../support/db.ts';

const HENDAYE = path.resolve('../shared/data/dvf/dvf_api_2019-2023_64260_hendaye_maisons_appartements.csv');
const hasHendaye = existsSync(HENDAYE);
const SKIP = hasHendaye ? '' : ' (skipped: ../shared/data/dvf absent)';

let t: Awaited<ReturnType<typeof createTestDb>>;
let b: Backtest;

beforeAll(async () => {
  t = await createTestDb();
  if (hasHendaye) {
    await importDvf(t.db, HENDAYE);
    b = await backtestEstimation(t.db, 'live', new Date('2026-01-15T00:00:00Z'));
  }
}, 300_000);
afterAll(async () => {
  await t?.drop();
});

describe('the backtest of the estimate on the real Hendaye DVF (2019-2023)', () => {
  it.skipIf(!hasHendaye)(`estimates the 2023 sales from 2019-2022 and measures error and coverage${SKIP}`, async () => {
    expect(b.millesime_teste).toBe(2023);
    expect(b.perimetre).toMatch(/2019-2022 pour estimer 2023/);
    // Hendaye sells mostly flats: their comparables group is large enough to be calibrated.
    const apparts = b.groupes.find((g) => g.type_bien === 'appartement' && g.socle === 'comparables_dvf')!;
    expect(apparts).toBeDefined();
    expect(apparts.n).toBeGreaterThanOrEqual(100);
    expect(apparts.n_calibration + apparts.n_controle).toBe(apparts.n);
    // Plausible figures for a real market, not a decoration: a median error between 5 and 40 %, more prices within
    // ±20 % than within ±10 %, and a half-width calibrated on one half that covers 65-95 % of the other half.
    expect(apparts.erreur_absolue_mediane_pct).toBeGreaterThan(5);
    expect(apparts.erreur_absolue_mediane_pct).toBeLessThan(40);
    expect(apparts.part_20_pct).toBeGreaterThan(apparts.part_10_pct);
    expect(apparts.demi_largeur_80_pct).toBeGreaterThan(apparts.erreur_absolue_mediane_pct);
    expect(apparts.couverture_pct).toBeGreaterThanOrEqual(65);
    expect(apparts.couverture_pct).toBeLessThanOrEqual(95);
  });

  it.skipIf(!hasHendaye)(
    `stores the measures with their date and sample, the half-width estimer_bien reads${SKIP}`,
    async () => {
      const { rows } = await t.db.query<{ indicateur: string; valeur: number; echantillon: number; mesure_le: Date }>(
        `SELECT indicateur, valeur, echantillon, mesure_le FROM modeles_mesures
        WHERE dataset = 'live' AND modele = 'estimation' AND type_bien = 'appartement' AND socle = 'comparables_dvf'`,
      );
      const par = new Map(rows.map((r) => [r.indicateur, r]));
      const apparts = b.groupes.find((g) => g.type_bien === 'appartement' && g.socle === 'comparables_dvf')!;
      expect(par.get('demi_largeur_80')?.valeur).toBe(apparts.demi_largeur_80_pct);
      expect(par.get('demi_largeur_80')?.echantillon).toBe(apparts.n_calibration);
      expect(par.get('couverture_80')?.echantillon).toBe(apparts.n_controle);
      expect(par.get('erreur_absolue_mediane')?.echantillon).toBe(apparts.n);
      expect(par.get('couverture_80')?.mesure_le.toISOString()).toBe('2026-01-15T00:00:00.000Z');
      // What estimer_bien serves for a flat estimated from comparables is that half-width, said calibrated.
      expect(await demiLargeur(t.db, 'live', 'appartement', 'comparables_dvf')).toMatchObject({
        pct: apparts.demi_largeur_80_pct,
        calibree: true,
        echantillon: apparts.n_calibration,
      });
      // The departmental index was rebuilt: one row per vintage for flats in 64.
      const { rows: indice } = await t.db.query(
        `SELECT millesime FROM estimation_indices WHERE dataset = 'live' AND departement = '64' AND type_bien = 'appartement' ORDER BY 1`,
      );
      expect(indice.map((r) => r.millesime)).toEqual([2019, 2020, 2021, 2022, 2023]);
    },
  );
});

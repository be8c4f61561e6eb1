import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importDvf } from '../../../domain/dvf/import.ts';
import { backtestBareme, type BacktestBareme } from '../../../domain/estimation/backtest-bareme.ts';
import { VENTE_UN_LOGEMENT } from '../../../domain/marche/agregats.ts';
import { createTestDb } from '../../support/db.ts';

// The bareme_prix sheet on the real Hendaye DVF (2019-2023): the commune scale of 2022 against the 2023 sales.

const HENDAYE = path.resolve('../shared/data/dvf/dvf_api_2019-2023_64260_hendaye_maisons_appartements.csv');
const hasHendaye = existsSync(HENDAYE);
const SKIP = hasHendaye ? '' : ' (skipped: ../shared/data/dvf absent)';

let t: Awaited<ReturnType<typeof createTestDb>>;
let b: BacktestBareme;

beforeAll(async () => {
  t = await createTestDb();
  if (hasHendaye) {
    await importDvf(t.db, HENDAYE);
    b = await backtestBareme(t.db, 'live', new Date('2026-01-15T00:00:00Z'));
  }
}, 300_000);
afterAll(async () => {
  await t?.drop();
});

describe('the backtest of the commune price scale (bareme_prix sheet)', () => {
  it.skipIf(!hasHendaye)(`measures the 2022 scale on the 2023 sales it never saw${SKIP}`, async () => {
    expect(b.millesime_teste).toBe(2023);
    expect(b.perimetre).toBe('1 commune, barème 2022 pour estimer les ventes 2023');
    // Recomputed here from the sales: Hendaye alone, with more than 10 sales a year, is served its own 2022 median.
    for (const type of ['appartement', 'maison']) {
      const { rows } = await t.db.query<{ annee: number; prix_m2: number }>(
        `SELECT m.millesime::int AS annee, m.prix_m2 FROM dvf_mutations m
          WHERE m.dataset = 'live' AND m.millesime IN (2022, 2023) AND ${VENTE_UN_LOGEMENT}
            AND (CASE WHEN 'appartement' = ANY(m.types_locaux) THEN 'appartement' ELSE 'maison' END) = $1`,
        [type],
      );
      const avant = rows.filter((r) => r.annee === 2022).map((r) => r.prix_m2);
      const tenues = rows.filter((r) => r.annee === 2023).map((r) => r.prix_m2);
      const med = (v: number[]) => {
        const s = [...v].sort((x, y) => x - y);
        return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
      };
      const bareme2022 = Math.round(med(avant));
      const erreurs = tenues.map((p) => bareme2022 / p - 1);
      const mesure = (i: string) => b.mesures.find((m) => m.indicateur === i && m.type_bien === type)!;
      expect(mesure('erreur_absolue_mediane').echantillon, type).toBe(tenues.length);
      expect(mesure('erreur_absolue_mediane').valeur, type).toBeCloseTo(
        Math.round(med(erreurs.map(Math.abs)) * 1000) / 10,
        1,
      );
      expect(mesure('biais_median').valeur, type).toBeCloseTo(Math.round(med(erreurs) * 1000) / 10, 1);
      expect(mesure('part_20').valeur).toBeGreaterThan(mesure('part_10').valeur);
      expect(mesure('part_10').valeur).toBeCloseTo(
        Math.round((erreurs.filter((e) => Math.abs(e) <= 0.1).length / erreurs.length) * 1000) / 10,
        1,
      );
    }
  });

  it.skipIf(!hasHendaye)(`stores the sheet dated, and a dataset of one vintage gets no figure${SKIP}`, async () => {
    const { rows } = await t.db.query<{ n: number; mesure_le: Date }>(
      `SELECT count(*)::int AS n, max(mesure_le) AS mesure_le FROM modeles_mesures
        WHERE dataset = 'live' AND modele = 'bareme_prix'`,
    );
    expect(rows[0]).toEqual({ n: 8, mesure_le: new Date('2026-01-15T00:00:00Z') });
    const vide = await backtestBareme(t.db, 'sandbox', new Date('2026-01-15T00:00:00Z'));
    expect(vide.mesures).toEqual([]);
    expect(vide.limites[0]).toMatch(/Un seul millésime DVF \(ou aucun\)/);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backtestTravaux, mesurerTravaux } from '../../../domain/estimation/backtest-travaux.ts';
import { mulberry32 } from '../../../lib/random.ts';
import { createTestDb } from '../../support/db.ts';

// The travaux sheet: the exit costs estimer_bien serves, measured on audits they never saw. Real energy audits are
// not among ../shared/data (see its README): the audits here are written for the test, with a known cost.

let t: Awaited<ReturnType<typeof createTestDb>>;

/** Audits of Latresne from F, established one every three days from 2024-01-01 to 2025-12-31. */
async function audits(dataset: 'live' | 'sandbox', cout: (etabli: string, i: number) => number, visee = 'C') {
  const debut = Date.parse('2024-01-01T00:00:00Z');
  for (let i = 0; i * 3 < 731; i++) {
    const etabli = new Date(debut + i * 3 * 86_400_000).toISOString().slice(0, 10);
    await t.db.query(
      `INSERT INTO dpe_audits (dataset, numero_audit, cle_ban, etabli_le, cout_travaux_max, classe_initiale,
                               classe_visee, etapes)
       VALUES ($1, $2, $3, $4, $5, 'F', $6, 3)`,
      [
        dataset,
        `A${String(i).padStart(5, '0')}`,
        `33234_z001_${String(i).padStart(5, '0')}`,
        etabli,
        cout(etabli, i),
        visee,
      ],
    );
  }
}

const quantile = (sorted: number[], q: number) => {
  const i = (sorted.length - 1) * q;
  const lo = Math.floor(i);
  return sorted[lo] + (sorted[Math.ceil(i)] - sorted[lo]) * (i - lo);
};

beforeAll(async () => {
  t = await createTestDb();
  const r = mulberry32(15);
  const normale = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  // Costs around 40 000 € with a lognormal spread; from July 2025 on, prices of works have doubled.
  const couts = new Map<number, number>();
  await audits('live', (etabli, i) => {
    const c = Math.round(40_000 * Math.exp(0.3 * normale()) * (etabli >= '2025-07-01' ? 2 : 1));
    couts.set(i, c);
    return c;
  });
}, 60_000);
afterAll(async () => {
  await t?.drop();
});

describe('the backtest of the exit costs (travaux sheet)', () => {
  it('prices the last six months of audits from the earlier ones only, per target they reach', async () => {
    const b = await mesurerTravaux(t.db, 'live', new Date('2026-01-15T00:00:00Z'));
    expect(b.perimetre).toBe(
      'audits établis du 2024-01-01 au 2025-06-30 pour estimer ceux du 2025-06-30 au 2025-12-30',
    );
    // The error recomputed here from the rows: the median cost of the audits before the cut, against each later one.
    const { rows } = await t.db.query<{ cout: number; tenu: boolean }>(
      `SELECT cout_travaux_max::float8 AS cout, etabli_le >= '2025-06-30' AS tenu FROM dpe_audits WHERE dataset = 'live'`,
    );
    const appris = rows
      .filter((x) => !x.tenu)
      .map((x) => x.cout)
      .sort((a, b) => a - b);
    const mediane = Math.round(quantile(appris, 0.5));
    const tenus = rows.filter((x) => x.tenu);
    const erreurs = tenus.map((x) => Math.abs(mediane / x.cout - 1)).sort((a, b) => a - b);
    const attendu = Math.round(quantile(erreurs, 0.5) * 1000) / 10;
    // Audits reaching C count for the targets D and C, not B.
    for (const vers of ['D', 'C']) {
      const erreur = b.mesures.find((m) => m.indicateur === 'erreur_absolue_mediane' && m.socle === vers)!;
      expect(erreur, vers).toBeDefined();
      expect(erreur.echantillon).toBe(tenus.length);
      expect(erreur.valeur).toBeCloseTo(attendu, 1);
      expect(erreur.hors_echantillon).toBe(true);
      expect(erreur.perimetre).toContain(`cible ${vers}`);
    }
    // Works that doubled in price: the earlier audits miss by about half, and few later costs fall in [p25, p75].
    expect(attendu).toBeGreaterThan(40);
    const iqr = b.mesures.find((m) => m.indicateur === 'couverture_p25_p75' && m.socle === 'C')!;
    expect(iqr.valeur).toBeLessThan(25);
    expect(b.mesures.some((m) => m.socle === 'B')).toBe(false);
    expect(b.limites.join(' ')).toMatch(/Sortie vers B : 0 audits tenus estimés, moins de 10 : erreur non mesurée/);
    // No audited DPE, no surface: the per-m² figure is not measured, and that is said.
    expect(b.mesures.some((m) => m.indicateur === 'erreur_absolue_mediane_surface')).toBe(false);
    expect(b.limites.join(' ')).toMatch(/de surface connue, moins de 10/);
  });

  it('writes the sheet with its date and sample; a dataset without audits gets no figure, said', async () => {
    await backtestTravaux(t.db, 'live', new Date('2026-01-15T00:00:00Z'));
    await backtestTravaux(t.db, 'sandbox', new Date('2026-01-15T00:00:00Z'));
    const { rows } = await t.db.query<{ dataset: string; indicateur: string; socle: string; mesure_le: Date }>(
      `SELECT dataset, indicateur, socle, mesure_le FROM modeles_mesures WHERE modele = 'travaux' ORDER BY 1, 2, 3`,
    );
    expect(rows.map((r) => `${r.dataset} ${r.indicateur} ${r.socle}`)).toEqual([
      'live couverture_p25_p75 C',
      'live couverture_p25_p75 D',
      'live erreur_absolue_mediane C',
      'live erreur_absolue_mediane D',
    ]);
    expect(rows.every((r) => r.mesure_le.toISOString() === '2026-01-15T00:00:00.000Z')).toBe(true);
    const { rows: limites } = await t.db.query<{ texte: string }>(
      `SELECT texte FROM modeles_limites WHERE dataset = 'sandbox' AND modele = 'travaux'`,
    );
    expect(limites.map((l) => l.texte)).toEqual([
      'Aucun audit énergétique importé : l’erreur des coûts de sortie n’est pas mesurée.',
    ]);
  });
});

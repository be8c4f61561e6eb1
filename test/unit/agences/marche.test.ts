import { describe, expect, it } from 'vitest';
import { activiteDe } from '../../../domain/agences/derive.ts';
import { marcheDe, mediane } from '../../../domain/agences/marche.ts';

// The market of a commune's month, against figures computed by hand.

describe('marcheDe', () => {
  it('gives shares, the leader’s share and the HHI of a small market', () => {
    // 5 + 3 + 2 = 10 mandates: shares 50 %, 30 %, 20 %; HHI = 0.25 + 0.09 + 0.04 = 0.38.
    const m = marcheDe([
      { vendeur: 'a', mandats: 5 },
      { vendeur: 'b', mandats: 3 },
      { vendeur: 'c', mandats: 2 },
    ]);
    expect(m).toMatchObject({ mandats_total: 10, n_agences: 3, part_leader_pct: 50, hhi: 0.38 });
    expect([...m.parts_pct]).toEqual([
      ['a', 50],
      ['b', 30],
      ['c', 20],
    ]);
  });

  it('is 1 for a single agency, 1/n for n equal ones, null without mandates', () => {
    expect(marcheDe([{ vendeur: 'a', mandats: 7 }]).hhi).toBe(1);
    expect(marcheDe(['a', 'b', 'c', 'd'].map((vendeur) => ({ vendeur, mandats: 2 }))).hhi).toBe(0.25);
    expect(marcheDe([])).toMatchObject({ mandats_total: 0, hhi: null, part_leader_pct: null });
  });

  it('takes the median of an even count as the mean of the middle two', () => {
    expect(mediane([9, 19, 15])).toBe(15);
    expect(mediane([4, 1, 3, 2])).toBe(2.5);
    expect(mediane([])).toBeNull();
  });
});

describe('activiteDe', () => {
  const mandat = (vendeur: string, debut: string, fin: string, extra: object = {}) => ({
    vendeur,
    siren: null,
    enseigne: vendeur,
    insee: '33001',
    exclusif: false,
    baisse: null,
    debut,
    fin,
    ...extra,
  });

  it('counts a mandate in every month it is online, its days to the month’s end, reduced once its drop is seen', () => {
    const lignes = activiteDe(
      [
        mandat('a', '2025-01-20', '2025-03-10', { exclusif: true, baisse: '2025-02-15' }),
        mandat('b', '2025-02-01', '2025-02-28'),
      ],
      '2025-01',
    );
    const de = (mois: string, v: string) => lignes.find((l) => l.mois === mois && l.vendeur === v);
    // January: a alone, 11 days online (20 to 31).
    expect(de('2025-01', 'a')).toMatchObject({
      mandats: 1,
      exclusifs: 1,
      duree_mediane_j: 11,
      part_baisses_pct: 0,
      part_marche_pct: 100,
    });
    // February: a (39 days, reduced on the 15th) and b (27 days): half the market each.
    expect(de('2025-02', 'a')).toMatchObject({ duree_mediane_j: 39, part_baisses_pct: 100, part_marche_pct: 50 });
    expect(de('2025-02', 'b')).toMatchObject({ duree_mediane_j: 27, part_marche_pct: 50 });
    // March: a until its withdrawal on the 10th.
    expect(de('2025-03', 'a')).toMatchObject({ duree_mediane_j: 49, part_marche_pct: 100 });
    expect(de('2025-03', 'b')).toBeUndefined();
  });

  it('computes no month before the first snapshot, though days online count from the first publication', () => {
    const lignes = activiteDe([mandat('a', '2024-11-15', '2025-01-31')], '2025-01');
    expect(lignes.map((l) => [l.mois, l.duree_mediane_j])).toEqual([['2025-01', 77]]);
  });
});

import { describe, expect, it } from 'vitest';
import {
  analyser,
  calendrierDpe,
  empreinte,
  type ContexteCommune,
  type EntreesAnalyse,
} from '../../../domain/annonces/analyse.ts';

// The analysis alone: a pure function of the listing and its commune.

const entrees = (extra: Partial<EntreesAnalyse> = {}): EntreesAnalyse => ({
  type: 'appartement',
  neuf: false,
  prix: 200_000,
  surface: 50,
  pieces: 2,
  chambres: 1,
  terrain_m2: null,
  terrain_suspect: null,
  dpe: { etiquette: 'D', ges_statut: null },
  details: { taxe_fonciere: 900, charges_copro_annuelles: 1500, charges_suspectes: false },
  description: 'Deux pièces lumineux, parquet, double vitrage, proche des commerces et des transports en commun.',
  photos: 8,
  precision: 'adresse',
  annee_construction: 1970,
  jours_en_ligne: 20,
  prix_initial: 200_000,
  changements_prix: [],
  nb_agences: 1,
  nb_portails: 1,
  departement: '59',
  le: '2025-10-01T08:00:00.000Z',
  ...extra,
});

const commune = (extra: Partial<ContexteCommune> = {}): ContexteCommune => ({
  reference: { prix_m2: 4000, millesime: 2025, label: 'mesure', n_ventes: 120 },
  raison_sans_reference: null,
  loyer: { loyer_m2: 16, nature: 'observe_commune', edition: 2025, type: 'appartement_t1_t2' },
  score_commune: 60,
  evolution_3_ans: -2,
  ...extra,
});

describe('analyser', () => {
  it('places the price against the commune and computes the yields from its rent', () => {
    const a = analyser(entrees(), commune());
    expect(a.prix_m2).toBe(4000);
    expect(a.ecart_reference_pct).toBe(0);
    expect(a.sous_scores.marche).toBe(50);
    expect(a.loyer).toEqual({ mensuel: 800, loyer_m2: 16, nature: 'observe_commune', edition: 2025 });
    expect(a.rendement_brut_pct).toBe(4.8);
    // 85 % of 12 × 800 over 200 000 + 8 %.
    expect(a.rendement_net_pct).toBe(3.8);
    expect(a.budget_total).toBe(216_000);
    expect(a.score).toBeGreaterThan(0);
    expect(a.verdict).not.toBeNull();
  });

  it('rates a price under the reference higher, and one above it lower', () => {
    const bas = analyser(entrees({ prix: 160_000 }), commune());
    const haut = analyser(entrees({ prix: 240_000 }), commune());
    expect(bas.sous_scores.marche).toBe(100);
    expect(haut.sous_scores.marche).toBe(0);
    expect(bas.score!).toBeGreaterThan(haut.score!);
    expect(haut.leviers.join(' ')).toMatch(/au-dessus de la référence/);
  });

  it('keeps the negotiation target between 60 % and 100 % of the price, whatever the listing', () => {
    const cas: EntreesAnalyse[] = [
      entrees(),
      entrees({ prix: 900_000, jours_en_ligne: 400, dpe: { etiquette: 'G', ges_statut: null }, nb_agences: 3 }),
      entrees({ description: 'Appartement à rénover, gros travaux.', prix: 500_000 }),
      entrees({
        prix: 100_000,
        changements_prix: [{ le: '2025-09-01T00:00:00Z', prix: 100_000 }],
        prix_initial: 130_000,
      }),
    ];
    for (const e of cas) {
      const { negociation } = analyser(e, commune());
      expect(negociation.cible_min!).toBeGreaterThanOrEqual(0.6 * e.prix!);
      expect(negociation.cible_min!).toBeLessThanOrEqual(e.prix!);
      expect(negociation.cible_max!).toBeGreaterThanOrEqual(negociation.cible_min!);
    }
    // The most negotiable case reaches the 40 % bound: 60 % of the price.
    const extreme = analyser(cas[1], commune());
    expect(extreme.negociation.decote_pct).toBe(40);
    expect(extreme.negociation.cible_min).toBe(540_000);
  });

  it('leaves a sub-score null without its inputs, and says why; no score without market nor rent', () => {
    const a = analyser(
      entrees({ dpe: { etiquette: null, ges_statut: null }, description: null, details: { charges_suspectes: null } }),
      commune({ reference: null, raison_sans_reference: 'Alsace-Moselle.', loyer: null, score_commune: null }),
    );
    expect(a.sous_scores).toMatchObject({
      marche: null,
      rentabilite: null,
      localisation: null,
      transport: null,
      etat: null,
      fiscalite: null,
      risques: null,
    });
    expect(a.sous_scores.qualite_annonce).toBeGreaterThan(0);
    expect(a.score).toBeNull();
    expect(a.verdict).toBeNull();
    const limites = a.limites.join(' ');
    for (const mot of [
      'marche : Alsace-Moselle',
      'rentabilite',
      'localisation',
      'transport',
      'etat',
      'fiscalite',
      'risques',
      'score',
    ]) {
      expect(limites).toContain(mot);
    }
  });

  it('counts the DPE calendar as a risk and a lever: G is already banned from letting, overseas has no calendar', () => {
    const g = analyser(entrees({ dpe: { etiquette: 'G', ges_statut: null } }), commune());
    expect(g).toMatchObject({ interdiction_location: '2025-01-01', mois_restants: 0 });
    expect(g.sous_scores.risques).toBe(50);
    expect(g.leviers.join(' ')).toMatch(/Classe G : location interdite depuis 2025-01-01/);
    expect(calendrierDpe('F', '59', new Date('2025-10-01T00:00:00Z'))).toEqual({
      interdiction_location: '2028-01-01',
      mois_restants: 27,
    });
    expect(calendrierDpe('G', '972', new Date('2025-10-01T00:00:00Z'))).toEqual({
      interdiction_location: null,
      mois_restants: null,
    });
  });

  it('reads works and renovation in the text', () => {
    const travaux = analyser(entrees({ description: 'Maison à rénover, travaux à prévoir.' }), commune());
    const renove = analyser(entrees({ description: 'Appartement entièrement rénové en 2023.' }), commune());
    expect(travaux.sous_scores.etat).toBe(35);
    expect(renove.sous_scores.etat).toBe(75);
  });

  it('is deterministic, and its fingerprint ignores the days online within a step', () => {
    expect(analyser(entrees(), commune())).toEqual(analyser(entrees(), commune()));
    expect(empreinte(entrees({ jours_en_ligne: 20 }), commune())).toBe(
      empreinte(entrees({ jours_en_ligne: 60 }), commune()),
    );
    expect(empreinte(entrees({ jours_en_ligne: 20 }), commune())).not.toBe(
      empreinte(entrees({ jours_en_ligne: 100 }), commune()),
    );
    expect(empreinte(entrees(), commune())).not.toBe(empreinte(entrees({ prix: 199_000 }), commune()));
  });
});

import { describe, expect, it } from 'vitest';
import { affiner, repli } from '../../../domain/estimation/affinage.ts';
import type { EstimationCalculee } from '../../../domain/estimation/operations.ts';

// estimer_bien_affine places the listings online against its own refined price per m², and never serves the asking
// prices the deterministic estimate carries for it.

const base = {
  bien: {
    type: 'appartement',
    surface_m2: 50,
    pieces: 2,
    commune: 'Latresne',
    code_postal: '33360',
    insee: '33234',
    origine: 'commune',
  },
  valeur: {
    bas: 200_000,
    valeur: 250_000,
    haut: 300_000,
    prix_m2: 5_000,
    demi_largeur_pct: 20,
    qualite: {
      n: 12,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: [],
      methode: 'm',
      donnees_du: null,
      source: 's',
    },
  },
  niveau: { prix_m2_socle: 5_000 },
  prix_demande: null,
  rendement: null,
  annonces_en_vente: { n: 4, prix_m2_median: 5_150, part_moins_cheres_pct: 50 },
  baisses: null,
  retraits: null,
  ajustements: [],
  limites: [],
  prix_m2_annonces: [4_800, 4_900, 5_400, 5_600],
} as unknown as EstimationCalculee;

describe('the listings online beside a refined estimate', () => {
  it('are placed again against the refined price per m², and their prices are not served', () => {
    const affinee = affiner(base, {
      verification: {
        lignes: [{ nature: 'vue', libelle: 'Vue dégagée', pct: 10, motif: 'vue', source: 'ia' }],
        vision: { equipements: [], constats: [] },
        notes: [],
        retenues: 1,
        ecartees: 0,
        bornees: 0,
      },
      modele: 'essai',
      photos: 0,
      photosAnalysees: 0,
      vueRaison: null,
    });
    expect(affinee.valeur.prix_m2).toBe(5_500);
    // 4 800, 4 900 and 5 400 are under 5 500: 75 %, where the deterministic 5 000 had 50 %.
    expect(affinee.annonces_en_vente).toEqual({ n: 4, prix_m2_median: 5_150, part_moins_cheres_pct: 75 });
    expect(affinee).not.toHaveProperty('prix_m2_annonces');
  });

  it('are served as computed by the deterministic fallback, without the prices it carries', () => {
    const servie = repli(base, 'Modèle absent.', 0);
    expect(servie.annonces_en_vente).toEqual(base.annonces_en_vente);
    expect(servie).not.toHaveProperty('prix_m2_annonces');
  });
});

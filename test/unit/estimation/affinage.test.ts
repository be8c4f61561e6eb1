import { describe, expect, it } from 'vitest';
import {
  NATURES_IA,
  PLAFOND_TOTAL_PCT,
  totalGeneral,
  verifierReponse,
  type AffinageModele,
  type Ligne,
} from '../../../domain/estimation/affinage.ts';

const champs = {
  type: 'appartement' as const,
  surface: 60,
  description: 'Appartement refait à neuf, parquet massif, vue dégagée sur le parc.',
  qualites: ['Lumineux'],
  equipements: ['Climatisation réversible'],
};
const ligne = (nature: string, pct: number, appui: string) => ({ nature, pct, motif: `Motif ${nature}.`, appui });
const sansVision = { equipements: [], constats: [] };
const bareme = (pct: number, nature = 'annexes'): Ligne => ({
  nature,
  libelle: nature,
  pct,
  motif: null,
  source: 'bareme',
});

describe('the server’s checks of the model’s answer', () => {
  it('bounds each line by its nature’s interval and says it', () => {
    const v = verifierReponse(
      {
        ajustements: [ligne('luminosite', 9, 'vue dégagée sur le parc'), ligne('nuisances', 4, 'Lumineux')],
        vision: sansVision,
      },
      { champs, bareme: [], photosAnalysees: 0 },
    );
    expect(v.lignes.map((l) => [l.nature, l.pct])).toEqual([['luminosite', NATURES_IA.luminosite.max]]);
    // nuisances cannot raise a value: +4 % is brought to 0, and a line of 0 is no line.
    expect(v.notes.join(' ')).toMatch(/« luminosite » ramenée de \+9 % à \+3 %/);
    expect(v.notes.join(' ')).toMatch(/« nuisances » ramenée de \+4 % à 0 %/);
    expect(v.bornees).toBe(2);
  });

  it('grounds a support on whole words of the fields, accents and case aside; never on a fragment or elsewhere', () => {
    const v = verifierReponse(
      {
        ajustements: [
          ligne('prestations', 3, 'PARQUET MASSIF'),
          ligne('equipements', 2, 'climatisation reversible'),
          ligne('agencement', 2, 'par'), // too short to ground anything
          ligne('exterieurs', 3, 'terrasse de 40 m²'), // nowhere in the fields
          ligne('etat', 5, 'arquet massi'), // a fragment of « parquet massif »
        ],
        vision: sansVision,
      },
      { champs, bareme: [], photosAnalysees: 0 },
    );
    expect(v.lignes.map((l) => l.nature)).toEqual(['prestations', 'equipements']);
    expect(v.ecartees).toBe(3);
  });

  it('grounds on the photos’ findings only when photos were read, and never on a finding with a price', () => {
    const reponse: AffinageModele = {
      ajustements: [ligne('etat', -4, 'fissures au plafond'), ligne('prestations', 2, 'cuisine à 20 000 €')],
      vision: { equipements: [], constats: ['Fissures au plafond de la chambre', 'Cuisine à 20 000 € environ'] },
    };
    const avec = verifierReponse(reponse, { champs, bareme: [], photosAnalysees: 1 });
    expect(avec.lignes.map((l) => [l.nature, l.pct])).toEqual([['etat', -4]]);
    expect(avec.vision.constats).toEqual(['Fissures au plafond de la chambre']);
    const sans = verifierReponse(reponse, { champs, bareme: [], photosAnalysees: 0 });
    expect(sans.lignes).toEqual([]);
    expect(sans.vision).toEqual({ equipements: [], constats: [] });
  });

  it('removes findings that carry a price, an amount or a percentage, keeps dates and plain facts', () => {
    const v = verifierReponse(
      {
        ajustements: [],
        vision: {
          equipements: ['Poêle à bois', 'Pompe à chaleur (8 k€)'],
          constats: [
            'Immeuble des années 1930',
            'Salle de bains à refaire, 12 000 euros',
            'Décote de 5 pour cent',
            'Surface vitrée : 30 %',
            'Prix affiché 350 000',
          ],
        },
      },
      { champs, bareme: [], photosAnalysees: 2 },
    );
    expect(v.vision).toEqual({ equipements: ['Poêle à bois'], constats: ['Immeuble des années 1930'] });
    expect(v.notes.join(' ')).toMatch(/4 constat\(s\) des photos retiré\(s\)/);
  });

  it('keeps one line per nature: a nature the scale counts, or given twice, is dropped', () => {
    const v = verifierReponse(
      {
        ajustements: [
          ligne('etat', 5, 'refait à neuf'),
          ligne('prestations', 2, 'parquet massif'),
          ligne('prestations', 4, 'Lumineux'),
        ],
        vision: sansVision,
      },
      { champs, bareme: [bareme(5, 'etat')], photosAnalysees: 0 },
    );
    expect(v.lignes.map((l) => [l.nature, l.pct])).toEqual([['prestations', 2]]);
    expect(v.notes.join(' ')).toMatch(/déjà comptée/);
  });

  it('scales the model’s lines down so that scale and model together stay within the total cap', () => {
    const lignesBareme = [bareme(8), bareme(10, 'etat'), bareme(3, 'dpe')]; // 21 %, the scale's own cap makes it 20 %
    const v = verifierReponse(
      {
        ajustements: [
          ligne('prestations', 5, 'parquet massif'),
          ligne('luminosite', 3, 'Lumineux'),
          ligne('equipements', 2, 'climatisation'),
        ],
        vision: sansVision,
      },
      { champs, bareme: lignesBareme, photosAnalysees: 0 },
    );
    const ia = v.lignes.reduce((s, l) => s + l.pct, 0);
    expect(ia).toBeCloseTo(PLAFOND_TOTAL_PCT - 20, 0);
    expect(totalGeneral([...lignesBareme, ...v.lignes])).toBeLessThanOrEqual(PLAFOND_TOTAL_PCT);
    expect(v.notes.join(' ')).toMatch(/bornée à ±25 %/);
  });
});

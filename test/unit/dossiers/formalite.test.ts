import { describe, expect, it } from 'vitest';
import {
  comparerDeclaree,
  formaliteDerivee,
  type ContexteFormalite,
  type ProjetMesure,
} from '../../../domain/dossiers/formalite.ts';

// The formality the Code de l'urbanisme sets, threshold by threshold, each on both sides of its limit.

const CTX: ContexteFormalite = {
  zone_urbaine_plu: true,
  secteur_protege: null,
  demandeur: 'personne_physique',
  surface_plancher_existante_m2: 90,
  surface_plancher_totale_declaree_m2: null,
  emprise_existante_m2: 90,
  emprise_totale_declaree_m2: null,
  maison_individuelle: true,
};

const projet = (p: Partial<ProjetMesure> & Pick<ProjetMesure, 'nature'>): ProjetMesure => {
  const surface = p.emprise_m2 ?? 0;
  return {
    libelle: 'Projet',
    emprise_m2: surface,
    surface_plancher_m2: p.nature === 'piscine' || p.nature === 'carport' ? 0 : surface,
    bassin_m2: null,
    hauteur_m: 3,
    hauteur_couverture_m: null,
    sur_existant: p.nature === 'extension' || p.nature === 'veranda',
    ...p,
  };
};
const derive = (p: Partial<ProjetMesure> & Pick<ProjetMesure, 'nature'>, ctx: Partial<ContexteFormalite> = {}) =>
  formaliteDerivee([projet(p)], { ...CTX, ...ctx });

describe('extensions of an existing house', () => {
  it.each([
    [5, true, 'aucune', 'R.421-13'],
    [5.01, true, 'declaration_prealable', 'R.421-17 f)'],
    [20, true, 'declaration_prealable', 'R.421-17 f)'],
    [30, true, 'declaration_prealable', 'R.421-17 f)'],
    [40, true, 'declaration_prealable', 'R.421-17 f)'],
    [45, true, 'permis_de_construire', 'R.421-14 b)'],
    [20.5, false, 'permis_de_construire', 'R.421-14 b)'],
    [20, false, 'declaration_prealable', 'R.421-17 f)'],
  ])('%f m² (urban zone of a PLU: %s) → %s (%s)', (surface, urbaine, formalite, article) => {
    const f = derive({ nature: 'extension', emprise_m2: surface }, { zone_urbaine_plu: urbaine as boolean });
    expect(f.formalite).toBe(formalite);
    expect(f.decisive.article).toBe(article);
  });

  it('a 30 m² extension that brings the house past 150 m² needs a permit, and an architect', () => {
    const f = derive({ nature: 'extension', emprise_m2: 30 }, { surface_plancher_totale_declaree_m2: 160 });
    expect(f.formalite).toBe('permis_de_construire');
    expect(f.decisive.article).toBe('R.421-14 b)');
    expect(f.architecte).toMatchObject({ obligatoire: true, article: 'R.431-2' });
  });

  it('the architect threshold: 150 m² after works is exempt, 150.5 m² is not', () => {
    expect(
      derive({ nature: 'extension', emprise_m2: 60 }, { surface_plancher_existante_m2: 90, emprise_existante_m2: 90 })
        .architecte.obligatoire,
    ).toBe(false);
    const au_dela = derive(
      { nature: 'extension', emprise_m2: 60.5 },
      { surface_plancher_existante_m2: 90, emprise_existante_m2: 90 },
    );
    expect(au_dela.surface_plancher_totale_m2).toBe(150.5);
    expect(au_dela.architecte).toMatchObject({ obligatoire: true, article: 'R.431-2' });
    // A company is never exempt.
    expect(derive({ nature: 'extension', emprise_m2: 45 }, { demandeur: 'societe' }).architecte.obligatoire).toBe(true);
    // A declaration never needs one, whatever the total (under 20 m², the 150 m² rule of R.421-14 b) does not apply).
    const petite = derive({ nature: 'extension', emprise_m2: 15 }, { surface_plancher_existante_m2: 200 });
    expect([petite.formalite, petite.architecte.obligatoire]).toEqual(['declaration_prealable', false]);
  });
});

describe('new detached constructions', () => {
  it.each([
    [5, 3, 'aucune', 'R.421-2 a)'],
    [5, 12.5, 'declaration_prealable', 'R.421-9 c)'],
    [5.5, 3, 'declaration_prealable', 'R.421-9 a)'],
    [20, 3, 'declaration_prealable', 'R.421-9 a)'],
    [20.5, 3, 'permis_de_construire', 'R.421-1'],
  ])('an outbuilding of %f m², %f m high → %s (%s)', (surface, hauteur, formalite, article) => {
    const f = derive({ nature: 'annexe', emprise_m2: surface, hauteur_m: hauteur });
    expect([f.formalite, f.decisive.article]).toEqual([formalite, article]);
  });

  it('the 40 m² allowance is for extensions only: a 30 m² garage apart from the house is a permit', () => {
    expect(derive({ nature: 'garage', emprise_m2: 30 }).formalite).toBe('permis_de_construire');
  });

  it('a carport counts by its footprint though it has no floor area', () => {
    expect(derive({ nature: 'carport', emprise_m2: 15 }).formalite).toBe('declaration_prealable');
  });

  it('in a protected area, a 4 m² shed needs a declaration (R.421-11)', () => {
    const f = derive({ nature: 'abri', emprise_m2: 4 }, { secteur_protege: 'site patrimonial remarquable (AC4)' });
    expect([f.formalite, f.decisive.article]).toEqual(['declaration_prealable', 'R.421-11']);
  });

  it('a terrace at ground level creates nothing', () => {
    expect(derive({ nature: 'terrasse', emprise_m2: 0, surface_plancher_m2: 0 }).formalite).toBe('aucune');
  });
});

describe('pools', () => {
  it.each([
    [10, null, 'aucune', 'R.421-2 d)'],
    [12, null, 'declaration_prealable', 'R.421-9 f)'],
    [100, 1.5, 'declaration_prealable', 'R.421-9 f)'],
    [100.5, null, 'permis_de_construire', 'R.421-1 et R.421-9 f)'],
    [120, null, 'permis_de_construire', 'R.421-1 et R.421-9 f)'],
    [30, 1.8, 'permis_de_construire', 'R.421-1 et R.421-9 f)'],
  ])('a %f m² basin, cover %s m → %s (%s)', (bassin, couverture, formalite, article) => {
    const f = derive({
      nature: 'piscine',
      emprise_m2: bassin,
      bassin_m2: bassin,
      hauteur_m: 0,
      hauteur_couverture_m: couverture,
    });
    expect([f.formalite, f.decisive.article]).toEqual([formalite, article]);
  });
});

describe('the dossier as a whole', () => {
  it('takes the most demanding project, and its form', () => {
    const f = formaliteDerivee(
      [
        projet({ nature: 'abri', emprise_m2: 4, libelle: 'Abri' }),
        projet({ nature: 'piscine', emprise_m2: 32, bassin_m2: 32, libelle: 'Piscine' }),
      ],
      CTX,
    );
    expect(f.formalite).toBe('declaration_prealable');
    expect(f.decisive.projet).toBe('Piscine');
    expect(f.cerfa?.numero).toBe('13703');
    expect(formaliteDerivee([projet({ nature: 'extension', emprise_m2: 45 })], CTX).cerfa?.numero).toBe('13406');
    expect(
      formaliteDerivee([projet({ nature: 'extension', emprise_m2: 45 })], { ...CTX, maison_individuelle: false }).cerfa
        ?.numero,
    ).toBe('13409');
  });

  it('corrects a declared formality with the article that decides it', () => {
    const f = derive({ nature: 'extension', emprise_m2: 30, libelle: 'Extension' });
    expect(comparerDeclaree('declaration_prealable', f)).toBeNull();
    expect(comparerDeclaree(undefined, f)).toBeNull();
    expect(comparerDeclaree('aucune', f)).toBe(
      'Formalité déclarée « aucune formalité » corrigée en « déclaration préalable » (article R.421-17 f) du Code de l’urbanisme) : Extension, 30 m² d’emprise au sol ou de surface de plancher créées, entre 20 et 40 m², en zone urbaine du PLU.',
    );
  });
});

import { describe, expect, it } from 'vitest';
import type { OperationContext } from '../../domain/catalogue.ts';
import { ApiError } from '../../domain/errors.ts';
import { outsideSandbox } from '../../domain/platform/sandbox.ts';
import { taxeAmenagement } from '../../domain/urbanisme/taxe-amenagement.ts';

// 2026 legal values, written here independently of the operation's table (CGI art. 1635 quater H, I, J, M, 235 ter ZG;
// actualisation au 1er janvier 2026).
const VF_HORS_IDF = 892;
const VF_IDF = 1011;
const PISCINE_M2 = 251;
const PLACE = 2928;
const ARCHEOLOGIE_PCT = 0.4;

function fakeCtx(options: { sandbox?: boolean; now?: string } = {}): OperationContext {
  return {
    caller: {
      organisationId: 'org_test',
      cleId: 'cle_test',
      compteId: null,
      sandbox: options.sandbox ?? false,
      portees: ['urbanisme'],
    },
    requestId: 'req_test',
    signal: new AbortController().signal,
    services: { now: () => new Date(options.now ?? '2026-11-21T12:00:00Z') },
  } as unknown as OperationContext;
}

/** Validates the body as the pipeline does, runs the handler, and checks the answer against the declared output. */
async function estimer(body: Record<string, unknown>, options?: { sandbox?: boolean; now?: string }) {
  const result = await taxeAmenagement.handler(taxeAmenagement.input.parse(body), fakeCtx(options));
  return taxeAmenagement.output.parse(result);
}

async function apiErrorOf(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const maisonLatresne = {
  insee: '33234',
  type_travaux: 'construction_nouvelle',
  formalite: 'permis_de_construire',
  surface_taxable_creee_m2: 120,
  residence_principale: true,
  piscine_m2: 32,
  places_exterieures: 2,
};

// First 100 m² of the main residence at half value, the other 20 m² at full value, then the pool and the two places.
const assietteLatresne = 100 * VF_HORS_IDF * 0.5 + 20 * VF_HORS_IDF + 32 * PISCINE_M2 + 2 * PLACE;
const pct = (assiette: number, taux: number) => Math.round((assiette * taux) / 100);

describe('taxe_amenagement', () => {
  it('gives a range on the legal scale when no rate is supplied', async () => {
    const r = await estimer(maisonLatresne);

    expect(r.statut).toBe('estimee');
    expect(r.annee_valeurs).toBe(2026);
    expect(r.abattement_residence_principale).toBe(true);
    expect(r.assiette_min).toBe(assietteLatresne);
    expect(r.assiette_max).toBe(assietteLatresne);
    expect(r.assiette.map((l) => l.min)).toEqual([
      100 * VF_HORS_IDF * 0.5,
      20 * VF_HORS_IDF,
      32 * PISCINE_M2,
      2 * PLACE,
    ]);

    const communale = r.parts.find((p) => p.part === 'communale')!;
    expect(communale).toMatchObject({ taux: null, taux_min: 1, taux_max: 5, a_confirmer: true });
    expect(communale.montant_min).toBe(pct(assietteLatresne, 1));
    expect(communale.montant_max).toBe(pct(assietteLatresne, 5));
    const departementale = r.parts.find((p) => p.part === 'departementale')!;
    expect(departementale.montant_min).toBe(0);
    expect(departementale.montant_max).toBe(pct(assietteLatresne, 2.5));
    expect(r.parts.some((p) => p.part === 'regionale')).toBe(false);

    expect(r.total_min).toBe(pct(assietteLatresne, 1));
    expect(r.total_max).toBe(pct(assietteLatresne, 5) + pct(assietteLatresne, 2.5));
    expect(r.a_confirmer).toBe(true);
    expect(r.archeologie).toMatchObject({
      statut: 'si_sous_sol',
      taux_pct: ARCHEOLOGIE_PCT,
      montant_min: pct(assietteLatresne, ARCHEOLOGIE_PCT),
    });
    expect(r.qualite).toMatchObject({ provenance: 'estime', n: null, drapeaux: [], donnees_du: '2026-01-01' });
    expect(r.qualite.incertitude).toMatchObject({ bas: r.total_min, haut: r.total_max });
    expect(r.valeurs.map((x) => x.valeur)).toEqual(expect.arrayContaining([VF_HORS_IDF, PISCINE_M2, PLACE]));
    expect(r.valeurs.every((x) => x.sources.length > 0)).toBe(true);
  });

  it('collapses the range to one amount when the voted rates are supplied', async () => {
    const r = await estimer({
      ...maisonLatresne,
      taux_communal_pct: 5,
      taux_departemental_pct: 1.3,
      affecte_sous_sol: true,
    });

    const attendu = pct(assietteLatresne, 5) + pct(assietteLatresne, 1.3);
    expect(r.total_min).toBe(attendu);
    expect(r.total_max).toBe(attendu);
    expect(r.parts.every((p) => !p.a_confirmer && p.taux_min === p.taux_max)).toBe(true);
    expect(r.a_confirmer).toBe(false);
    expect(r.qualite.incertitude?.demi_largeur_pct).toBe(0);
    expect(r.archeologie).toMatchObject({ statut: 'due', montant_min: pct(assietteLatresne, ARCHEOLOGIE_PCT) });
    // Above 1 500 €, the tax is paid in two instalments.
    expect(r.declaration.some((d) => d.etape.includes('deux fois'))).toBe(true);
  });

  it('tells each estimate its own expected payment, one estimate after another', async () => {
    const paiement = async (surface: number, taux?: number) => {
      const r = await estimer({
        insee: '33234',
        surface_taxable_creee_m2: surface,
        residence_principale: false,
        ...(taux === undefined ? {} : { taux_communal_pct: taux, taux_departemental_pct: 1.3 }),
      });
      return r.declaration.find((d) => d.etape.startsWith('Paiement'))!.etape;
    };
    // 20 m² at 892 €/m² and 6.3 %: about 1 124 €, under the 1 500 € of a single payment; 500 m²: about 28 098 €.
    expect(await paiement(20, 5)).toContain('en une fois est attendu');
    expect(await paiement(500, 5)).toContain('en deux fois est attendu');
    // Without the rates, 25 m² spans both sides of 1 500 € (1 % to 5 % communal, up to 2.5 % departmental).
    expect(await paiement(25)).toContain('Selon les taux réellement votés');
    expect(await paiement(20, 5)).toContain('en une fois est attendu');
  });

  it('uses the Île-de-France value and adds a regional share in Paris', async () => {
    const r = await estimer({ insee: '75111', surface_taxable_creee_m2: 80, residence_principale: false });

    expect(r.assiette_max).toBe(80 * VF_IDF);
    const regionale = r.parts.find((p) => p.part === 'regionale');
    expect(regionale).toMatchObject({ taux_min: 0, taux_max: 1, montant_max: pct(80 * VF_IDF, 1), a_confirmer: true });
  });

  it('limits the allowance of an extension to what the existing dwelling leaves of the first 100 m²', async () => {
    const r = await estimer({
      insee: '33234',
      type_travaux: 'travaux_existant',
      surface_taxable_creee_m2: 30,
      surface_taxable_existante_m2: 80,
      residence_principale: true,
      taux_communal_pct: 4,
      taux_departemental_pct: 1.3,
    });

    expect(r.assiette_max).toBe(20 * VF_HORS_IDF * 0.5 + 10 * VF_HORS_IDF);
  });

  it('turns an unknown use into a range: allowance at best, none at worst', async () => {
    const r = await estimer({ insee: '33234', surface_taxable_creee_m2: 120 });

    expect(r.assiette_min).toBe(100 * VF_HORS_IDF * 0.5 + 20 * VF_HORS_IDF);
    expect(r.assiette_max).toBe(120 * VF_HORS_IDF);
  });

  it('is not due when the works need no formality', async () => {
    const r = await estimer({ ...maisonLatresne, formalite: 'aucune' });

    expect(r.statut).toBe('non_due');
    expect(r.total_min).toBe(0);
    expect(r.total_max).toBe(0);
    expect(r.parts).toEqual([]);
    expect(r.archeologie?.statut).toBe('non_due');
  });

  it('is not due for works that create no taxable surface', async () => {
    const r = await estimer({ insee: '33234', type_travaux: 'ravalement', formalite: 'declaration_prealable' });

    expect(r.statut).toBe('non_due');
  });

  it('does not compute a change of use, and says why', async () => {
    const r = await estimer({ insee: '33234', type_travaux: 'changement_destination', surface_taxable_creee_m2: 50 });

    expect(r.statut).toBe('hors_calcul');
    expect(r.total_min).toBeNull();
    expect(r.notes.join(' ')).toMatch(/exonéré/);
  });

  it('asks for the surface of a construction given without one', async () => {
    const r = await estimer({
      insee: '33234',
      type_travaux: 'construction_nouvelle',
      formalite: 'permis_de_construire',
    });

    expect(r.statut).toBe('faits_manquants');
    expect(r.faits_manquants).toEqual(['surface_taxable_creee_m2']);
    expect(r.total_min).toBeNull();
    expect(r.archeologie).toBeNull();
  });

  it('treats a basin alone as a pool', async () => {
    const r = await estimer({ insee: '33234', piscine_m2: 32, taux_communal_pct: 5, taux_departemental_pct: 1.3 });

    expect(r.statut).toBe('estimee');
    expect(r.total_max).toBe(pct(32 * PISCINE_M2, 5) + pct(32 * PISCINE_M2, 1.3));
  });

  it('answers commune_introuvable for a well-formed unknown code', async () => {
    const error = await apiErrorOf(estimer({ ...maisonLatresne, insee: '99999' }));
    expect(error.code).toBe('commune_introuvable');
    expect(error.status).toBe(404);
  });

  it('keeps sandbox keys inside the sandbox communes', async () => {
    // The pipeline refuses a territory outside the sandbox before the handler runs (test/api/bac-a-sable.test.ts):
    // the operation names the commune of its input.
    const [territoire] = taxeAmenagement.territoires!({ ...maisonLatresne, insee: '13055' } as never);
    expect(outsideSandbox(territoire!)).toMatch(/13055/);
    expect(outsideSandbox(taxeAmenagement.territoires!(maisonLatresne as never)[0]!)).toBeNull();

    const r = await estimer(maisonLatresne, { sandbox: true });
    expect(r.statut).toBe('estimee');
  });

  it('refuses a communal rate below the legal floor', async () => {
    const error = await apiErrorOf(estimer({ ...maisonLatresne, taux_communal_pct: 0.5 }));
    expect(error.code).toBe('parametres_invalides');
    expect(error.erreurs?.[0].champ).toBe('taux_communal_pct');
  });

  it('accepts Corsican codes', async () => {
    const r = await estimer({ insee: '2a004', surface_taxable_creee_m2: 40, residence_principale: false });

    expect(r.insee).toBe('2A004');
    expect(r.assiette_max).toBe(40 * VF_HORS_IDF);
  });

  it('serves the last known values, flagged, in a year whose values are not in the table yet', async () => {
    const r = await estimer(maisonLatresne, { now: '2027-03-01T12:00:00Z' });

    expect(r.annee_valeurs).toBe(2026);
    expect(r.qualite.drapeaux).toContain('donnee_ancienne');
    expect(r.a_confirmer).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../lib/random.ts';
import { bandeDe, exemplesDe, fenetreDe, HORIZON_JOURS } from '../../../domain/pre-marche/entrainement.ts';
import type { Historique } from '../../../domain/pre-marche/historique.ts';
import { aire, ajusterLogistique, tolerancePct } from '../../../domain/pre-marche/regression.ts';
import {
  SIGNAUX,
  signauxDe,
  variablesAu,
  type AdresseHistorique,
  type DpeEvenement,
  type VentesParRue,
} from '../../../domain/pre-marche/signaux.ts';

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

describe('ajusterLogistique', () => {
  it('finds the coefficients a sample was drawn with', () => {
    const vrai = { intercept: -1.2, coefficients: [1.5, -0.8, 0.4] };
    const alea = mulberry32(7);
    const n = 20_000;
    const k = 3;
    const x = new Float64Array(n * k);
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      let z = vrai.intercept;
      for (let j = 0; j < k; j++) {
        x[i * k + j] = alea() < 0.3 ? 1 : 0;
        z += vrai.coefficients[j] * x[i * k + j];
      }
      y[i] = alea() < sigmoid(z) ? 1 : 0;
    }
    const f = ajusterLogistique(x, y, k, { lambda: 1 });
    expect(f.intercept).toBeCloseTo(vrai.intercept, 1);
    for (let j = 0; j < k; j++) {
      expect(Math.abs(f.coefficients[j] - vrai.coefficients[j]), `coefficient ${j}`).toBeLessThan(3 * f.erreurs[j + 1]);
    }
    expect(f.iterations).toBeLessThan(15);
  });

  it('stays finite when a signal separates the outcomes (the penalty holds it)', () => {
    const x = Float64Array.from([1, 1, 0, 0, 0, 0]);
    const y = Float64Array.from([1, 1, 0, 0, 1, 0]);
    const f = ajusterLogistique(x, y, 1, { lambda: 1 });
    expect(Number.isFinite(f.coefficients[0])).toBe(true);
    expect(f.coefficients[0]).toBeGreaterThan(0);
  });
});

describe('aire and tolerancePct', () => {
  it('measures the AUC, ties counted half', () => {
    expect(aire([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])).toBe(0.75);
    expect(aire([0.5, 0.5], [0, 1])).toBe(0.5);
    expect(aire([0.5, 0.6], [1, 1])).toBeNull();
  });

  it('widens the tolerance of a thin band', () => {
    // 2.58 standard errors of a rate at 50 % over n examples, plus 3 points.
    expect(tolerancePct(0.5, 100)).toBe(15.9);
    expect(tolerancePct(0.5, 2500)).toBe(5.6);
    expect(tolerancePct(0.5, 30)).toBeGreaterThan(tolerancePct(0.5, 100));
  });
});

function dpe(numero: string, date: string, extra: Partial<DpeEvenement> = {}): DpeEvenement {
  return {
    numero,
    date,
    type: 'maison',
    surface: 110,
    etiquette: 'F',
    copro: false,
    periode: null,
    chauffage: null,
    ...extra,
  };
}

function adresse(extra: Partial<AdresseHistorique> = {}): AdresseHistorique {
  return {
    cle: '33234_z001_00001',
    rue: '33234_z001',
    insee: '33234',
    codePostal: '33360',
    adresse: null,
    commune: 'Latresne',
    lat: 44.78,
    lon: -0.49,
    dpe: [dpe('D1', '2023-05-10')],
    audits: [],
    ventes: [],
    societes: [],
    permis: [],
    ...extra,
  };
}

describe('the signals as of a DPE: nothing from its future', () => {
  const le = '2023-05-10';
  const rues: VentesParRue = new Map([['33234_z001', ['2022-09-01', '2023-06-01', '2023-07-01', '2023-08-01']]]);

  it('reads no event dated after the DPE (sales, audits, companies, permits, later DPE)', () => {
    const sans = adresse();
    const avecFutur = adresse({
      dpe: [dpe('D1', le), dpe('D2', '2024-02-01')],
      audits: [{ date: '2023-05-11', pack: true }],
      ventes: [
        { date: '2023-05-10', prix: 200_000 },
        { date: '2023-11-02', prix: 210_000 },
      ],
      societes: [
        {
          denomination: 'SCI X (FICTIVE)',
          siren: '999000001',
          forme: null,
          debut: '2023-06-01',
          dernier_avis: null,
          le: null,
        },
      ],
      permis: [{ date: '2023-09-01', type: 'PC' }],
    });
    const d = sans.dpe[0];
    expect(variablesAu(avecFutur, d, rues)).toEqual(variablesAu(sans, d, rues));
    expect(signauxDe(variablesAu(avecFutur, d, rues), d, avecFutur)).toEqual(
      signauxDe(variablesAu(sans, d, rues), d, sans),
    );
    // Only the street's sale of 2022 is counted, not the three after the DPE.
    expect(variablesAu(sans, d, rues).ventes_ilot_avant_dpe).toBe(1);
  });

  it('reads the same events when they are dated before (the test above can fail)', () => {
    const passe = adresse({
      dpe: [dpe('D0', '2021-09-01'), dpe('D1', le)],
      audits: [{ date: le, pack: true }],
      ventes: [{ date: '2022-01-15', prix: 200_000 }],
      societes: [
        {
          denomination: 'SCI X (FICTIVE)',
          siren: '999000001',
          forme: null,
          debut: '2020-06-01',
          dernier_avis: null,
          le: null,
        },
      ],
      permis: [{ date: '2022-09-01', type: 'PC' }],
    });
    const v = variablesAu(passe, passe.dpe[1], rues);
    expect(v).toMatchObject({
      audit_connu: true,
      dpe_valide_au_dpe: true,
      sci_connue_au_dpe: true,
      ventes_numero_avant_dpe: 1,
      annees_detention_au_dpe: 1.3,
    });
    const signaux = signauxDe(v, passe.dpe[1], passe);
    const present = SIGNAUX.filter((_, j) => signaux[j] === 1).map((s) => s.signal);
    expect(present).toEqual(
      expect.arrayContaining([
        'audit_connu',
        'dpe_valide_au_dpe',
        'detention_moins_2_ans',
        'sci_connue_au_dpe',
        'permis_3_ans',
        'passoire',
      ]),
    );
  });

  it('labels an example by a sale within 12 months of its DPE only, and keeps DPE whose year is not over out', () => {
    const h: Historique = {
      adresses: new Map([
        [
          'a',
          adresse({
            cle: 'a',
            dpe: [dpe('D1', '2023-01-10'), dpe('D2', '2024-03-01'), dpe('D3', '2024-12-01')],
            ventes: [
              { date: '2024-01-09', prix: 1 },
              { date: '2025-06-01', prix: 1 },
            ],
          }),
        ],
        // Alsace-Moselle: no DVF, no example.
        ['b', adresse({ cle: 'b', insee: '67482', dpe: [dpe('D9', '2023-01-10')] })],
      ]),
      ventesParRue: new Map(),
      referenceLe: '2025-10-31',
      dvfJusquAu: '2025-06-30',
      banNumeros: new Set(),
    };
    const ex = exemplesDe(h);
    expect(ex.map((e) => [e.dpe.numero, e.y])).toEqual([
      ['D1', 1],
      ['D2', 0],
    ]);
    expect(HORIZON_JOURS).toBe(365);
  });
});

describe('bands and windows', () => {
  it('puts an index in the highest band whose lower bound it reaches', () => {
    const bandes = [
      { rang: 0, indice_min: 1.5 },
      { rang: 1, indice_min: 0.5 },
      { rang: 2, indice_min: -0.4 },
    ];
    expect(bandeDe(bandes, 2)?.rang).toBe(0);
    expect(bandeDe(bandes, 0.5)?.rang).toBe(1);
    expect(bandeDe(bandes, -3)?.rang).toBe(2);
  });

  it('closes the mandate window as the DPE ages', () => {
    expect(fenetreDe(10).valeur).toBe(1);
    expect(fenetreDe(120).valeur).toBeLessThan(1);
    expect(fenetreDe(400).valeur).toBeLessThan(fenetreDe(120).valeur);
  });
});

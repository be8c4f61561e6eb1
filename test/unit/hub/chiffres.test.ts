import { describe, expect, it } from 'vitest';
import {
  extraireChiffres,
  indexerSources,
  MARQUE_NON_VERIFIE,
  verifierChiffres,
  type Chiffre,
  type SourcesChiffres,
} from '../../../domain/hub/chiffres.ts';

/** What the sandbox's `resoudre_adresse` → `ventes_adresse` → `faits_adresse` → `ventes_commune` chain returns. */
const RESULTATS: unknown[] = [
  {
    cle_ban: '33063_1234_00012',
    label: '12 Rue des Lilas 33000 Bordeaux',
    insee: '33063',
    code_postal: '33000',
    score: 0.97,
  },
  {
    ventes: [
      {
        id_mutation: '2024-1234567',
        date_mutation: '2024-03-01',
        valeur_fonciere: 245000,
        surface_reelle_bati: 71.8,
        nombre_pieces: 3,
        type_local: 'Appartement',
        prix_m2: 3411.87,
        parcelle: '33063000AB0123',
      },
      {
        id_mutation: '2023-7654321',
        date_mutation: '2023-11-17',
        valeur_fonciere: 198500,
        surface_reelle_bati: 58,
        nombre_pieces: 2,
        type_local: 'Appartement',
        prix_m2: '3422.41',
      },
      {
        id_mutation: '2022-0001234',
        date_mutation: '2022-06-30',
        valeur_fonciere: 1185000,
        surface_reelle_bati: 182.5,
        nombre_pieces: 6,
        type_local: 'Maison',
        prix_m2: 6493.15,
      },
    ],
  },
  {
    dpe: [
      { date_etablissement: '2025-01-15T09:30:00.000Z', etiquette: 'D', conso_kwh_m2: 212.4, part_vitrage: 0.1234 },
    ],
  },
  {
    commune: { insee: '33063', nom: 'Bordeaux', code_postal: '33000' },
    par_trimestre: [
      { trimestre: '2024-T4', debut: '2024-10-01', ventes: 1843, prix_m2_median: 4512.5 },
      { trimestre: '2025-T1', debut: '2025-01-01', ventes: 1702, prix_m2_median: 4480 },
    ],
    par_annee: [{ annee: 2024, transactions_total: 7215, prix_m2_global: 4530.8 }],
    velocite: {
      evolution_volume_pct: -3.2,
      taux_vente_12m_pct: 4.7,
      lecture: 'Le volume a baissé de 3,2 % entre 2023 et 2024 ; prix médian de 4 512 €/m² fin 2024.',
    },
  },
];
const QUESTION = 'Que vaut mon T3 de 72 m² au 12 rue des Lilas à Bordeaux ? Je vise 260 000 € net vendeur.';
const SOURCES: SourcesChiffres = { question: QUESTION, resultats: RESULTATS };

const verifier = (reponse: string, sources: SourcesChiffres = SOURCES) => verifierChiffres(reponse, sources);
const nombres = (texte: string) =>
  extraireChiffres(texte).map((c) => (c.type === 'date' ? [c.texte, c.type, c.date] : [c.texte, c.type, c.valeur]));
const seul = (texte: string): Chiffre => {
  const chiffres = extraireChiffres(texte);
  expect(chiffres).toHaveLength(1);
  return chiffres[0];
};

describe('extraireChiffres', () => {
  it('reads French grouping with U+202F, U+00A0, thin and plain spaces, and the decimal comma', () => {
    for (const espace of ['\u202f', '\u00a0', '\u2009', ' ']) {
      expect(seul(`Prix : 1${espace}234,5${espace}€.`)).toMatchObject({
        texte: `1${espace}234,5${espace}€`,
        type: 'eur',
        valeur: 1234.5,
        decimales: 1,
        pas: 0.1,
      });
    }
    expect(seul('un total de 12 345 678 €')).toMatchObject({ valeur: 12345678 });
    expect(seul('soit 3411.87 au compteur')).toMatchObject({ valeur: 3411.87, decimales: 2 });
    expect(seul('1.234.567 €')).toMatchObject({ valeur: 1234567, pas: 1 });
  });

  it('gives each figure its unit kind', () => {
    expect(nombres('3 412 €/m², 3 412 € / m², 3 412 euros le m², 4 euros par mètre carré, 3 412 €/m2')).toEqual([
      ['3 412 €/m²', 'eur_m2', 3412],
      ['3 412 € / m²', 'eur_m2', 3412],
      ['3 412 euros le m²', 'eur_m2', 3412],
      ['4 euros par mètre carré', 'eur_m2', 4],
      ['3 412 €/m2', 'eur_m2', 3412],
    ]);
    expect(nombres('72 m², 58 m2, 12,3 %, 5 pour cent, 245 000 euros, 245 000 EUR, 7 215 ventes')).toEqual([
      ['72 m²', 'm2', 72],
      ['58 m2', 'm2', 58],
      ['12,3 %', 'pct', 12.3],
      ['5 pour cent', 'pct', 5],
      ['245 000 euros', 'eur', 245000],
      ['245 000 EUR', 'eur', 245000],
      ['7 215', 'nombre', 7215],
    ]);
    expect(nombres('65m² et 12% et 3412€')).toEqual([
      ['65m²', 'm2', 65],
      ['12%', 'pct', 12],
      ['3412€', 'eur', 3412],
    ]);
  });

  it('scales k€, M€, Md€, mille, million(s) and milliard(s), keeping the written number', () => {
    expect(seul('3,4 k€')).toMatchObject({ type: 'eur', valeur: 3400, ecrit: 3.4, multiplicateur: 1000, pas: 100 });
    expect(seul('3,4k€')).toMatchObject({ valeur: 3400 });
    expect(seul('1,2 M€')).toMatchObject({ type: 'eur', valeur: 1_200_000, pas: 100_000 });
    expect(seul("1,2 million d'euros")).toMatchObject({ type: 'eur', valeur: 1_200_000, pas: 100_000 });
    expect(seul('2,5 millions d’euros')).toMatchObject({ type: 'eur', valeur: 2_500_000 });
    expect(seul('1,5 Md€')).toMatchObject({ type: 'eur', valeur: 1_500_000_000 });
    expect(seul('3 millions d’habitants')).toMatchObject({ type: 'nombre', valeur: 3_000_000, pas: 1_000_000 });
  });

  it('takes the last written digit as the precision, trailing zeros of an integer down to two significant digits', () => {
    const pas = (texte: string) => (seul(texte) as { pas: number }).pas;
    expect(pas('3 412 €')).toBe(1);
    expect(pas('3 500 €')).toBe(100);
    expect(pas('3 000 €')).toBe(100);
    expect(pas('250 000 €')).toBe(10_000);
    expect(pas('1 000 000 €')).toBe(100_000);
    expect(pas('100 ventes')).toBe(10);
    expect(pas('10 %')).toBe(1);
    expect(pas('0 %')).toBe(1);
    expect(pas('12,30 %')).toBe(0.01);
    expect(pas('3,0 %')).toBe(0.1);
    // « Environ » makes every trailing zero a rounding.
    expect(pas('environ 3 000 €')).toBe(1000);
    expect(pas('près de 200 000 €')).toBe(100_000);
    expect(pas('près de 250 000 €')).toBe(10_000);
    expect(pas('environ 3 412 €')).toBe(1);
  });

  it('reads signs: hyphen, minus sign, plus', () => {
    expect(seul('une variation de -3,2 %')).toMatchObject({ valeur: -3.2, signe: -1 });
    expect(seul('une variation de −3,2 %')).toMatchObject({ valeur: -3.2, signe: -1 });
    expect(seul('une variation de +3,2 %')).toMatchObject({ valeur: 3.2, signe: 1 });
    expect(seul('une baisse de 3,2 %')).toMatchObject({ valeur: 3.2, signe: 0 });
  });

  it('reads dates in French and ISO forms at their own precision', () => {
    const dates = extraireChiffres(
      'le 1er mars 2025, le 1 mars 2025, le 1ᵉʳ mars 2025, le 2025-03-01, le 01/03/2025, en mars 2025, en 03/2025, ' +
        'en févr. 2025, le 12 mars, au T1 2025, au 1er trimestre 2025, au deuxième trimestre de 2024, 2024-T4, ' +
        'en 2024, le 2025-01-15T09:30:00Z',
    ).map((c) => (c.type === 'date' ? `${c.date} ${c.precision}` : `${c.texte} ?`));
    expect(dates).toEqual([
      '2025-03-01 jour',
      '2025-03-01 jour',
      '2025-03-01 jour',
      '2025-03-01 jour',
      '2025-03-01 jour',
      '2025-03 mois',
      '2025-03 mois',
      '2025-02 mois',
      '--03-12 jour',
      '2025-T1 trimestre',
      '2025-T1 trimestre',
      '2024-T2 trimestre',
      '2024-T4 trimestre',
      '2024 annee',
      '2025-01-15 jour',
    ]);
  });

  it('does not read « mars » alone, a 13th month or a day 32 as dates', () => {
    expect(extraireChiffres('en mars, les prix montent')).toEqual([]);
    expect(nombres('le 2025-13-01')).toEqual([]);
    expect(nombres('32/01/2025')).toEqual([]);
  });

  it('reads ranges as two figures, the first taking the unit of the second', () => {
    expect(nombres('de 3 000 à 3 500 €/m²')).toEqual([
      ['3 000', 'eur_m2', 3000],
      ['3 500 €/m²', 'eur_m2', 3500],
    ]);
    expect(nombres('entre 12 et 15 %')).toEqual([
      ['12', 'pct', 12],
      ['15 %', 'pct', 15],
    ]);
    expect(nombres('12-15 %')).toEqual([
      ['12', 'pct', 12],
      ['15 %', 'pct', 15],
    ]);
    expect(nombres('3 000–3 500 €')).toEqual([
      ['3 000', 'eur', 3000],
      ['3 500 €', 'eur', 3500],
    ]);
    expect(nombres('de 3 à 3,5 k€')).toEqual([
      ['3', 'eur', 3000],
      ['3,5 k€', 'eur', 3500],
    ]);
    expect(nombres('de 2000 à 2500 €')).toEqual([
      ['2000', 'eur', 2000],
      ['2500 €', 'eur', 2500],
    ]);
    expect(nombres('de 2019 à 2024, 2019-2024')).toEqual([
      ['2019', 'date', '2019'],
      ['2024', 'date', '2024'],
      ['2019', 'date', '2019'],
      ['2024', 'date', '2024'],
    ]);
    // A year followed by an amount is no range.
    expect(nombres('en 2023 et 3 500 €')).toEqual([
      ['2023', 'date', '2023'],
      ['3 500 €', 'eur', 3500],
    ]);
  });

  it('reads no figure in numbering, ordinals, identifiers, references, links', () => {
    const texte = [
      '### 2.1 Les ventes',
      '1. Premier point',
      '2) Deuxième point',
      '**3.** Troisième point',
      '> 4. Cité',
      '- 5. Dans une puce',
      'Un T3 au 2e étage, le 1er étage, R+2, F4, zone UA10, à 14h30, 2A004, H2O.',
      'Article L. 123-1 du code, art. 12, article 7, n° 5, nº 6, no. 8, numéro 9, R. 111-2, L123-1, alinéa 3, p. 12.',
      'Mutation 2024-1234567, clé 33063_1234_00012, parcelle 33063000AB0123, 24/7, 123-1.',
      'Voir [1], [^2], https://exemple.fr/2024/12/3412 et [le lien](https://exemple.fr/a?b=3412).',
    ].join('\n');
    expect(extraireChiffres(texte)).toEqual([]);
  });

  it('reads the link text, heading figures and list item figures', () => {
    expect(nombres('[3 412 €/m²](https://exemple.fr/x)')).toEqual([['3 412 €/m²', 'eur_m2', 3412]]);
    expect(nombres('## Prix 2024 : 3 412 €/m²')).toEqual([
      ['2024', 'date', '2024'],
      ['3 412 €/m²', 'eur_m2', 3412],
    ]);
    expect(nombres('1. 245 000 € le 2024-03-01')).toEqual([
      ['245 000 €', 'eur', 245000],
      ['2024-03-01', 'date', '2024-03-01'],
    ]);
  });

  it('compares codes exactly: 5 digits and more without grouping, or a leading zero', () => {
    expect(seul('INSEE 33063')).toMatchObject({ type: 'nombre', valeur: 33063, code: true });
    expect(seul('code postal 01000')).toMatchObject({ valeur: 1000, code: true });
    expect(seul('33 063 ventes')).toMatchObject({ valeur: 33063, code: false, pas: 1 });
    expect(seul('33000 €')).toMatchObject({ code: false, pas: 1000 });
  });

  it('gives positions that slice the written figure out of the text', () => {
    const texte = '**Prix** : 3\u202f412 €/m² — le 1er mars 2025 (+3,2 %).';
    for (const c of extraireChiffres(texte)) expect(texte.slice(c.debut, c.fin)).toBe(c.texte);
    expect(extraireChiffres(texte).map((c) => c.texte)).toEqual(['3\u202f412 €/m²', '1er mars 2025', '+3,2 %']);
  });
});

describe('indexerSources', () => {
  const index = indexerSources(SOURCES);
  const contient = (n: number) => index.nombres.includes(n);

  it('collects JSON numbers at any depth, numbers written as strings and in French prose', () => {
    for (const n of [0.97, 245000, 71.8, 3411.87, 3422.41, 212.4, 0.1234, 1843, 4512.5, 7215, -3.2, 4.7, 4512]) {
      expect(contient(n), String(n)).toBe(true);
    }
    expect([...index.nombres]).toEqual([...index.nombres].sort((a, b) => a - b));
  });

  it('collects dates at every precision from ISO days, timestamps, quarters and prose', () => {
    for (const cle of ['2024-03-01', '2024-03', '2024-T1', '2024', '--03-01', '2025-01-15', '2024-T4', '2023']) {
      expect(index.dates.has(cle), cle).toBe(true);
    }
    expect(index.dates.has('2024-04')).toBe(false);
  });

  it('collects the digits of identifiers, of field names, the lengths of lists and the question', () => {
    for (const n of [33063, 1234, 12, 1234567, 123, 3, 1, 72, 260000]) expect(contient(n), String(n)).toBe(true);
    // `taux_vente_12m_pct`, a list of three sales, the question's « T3 » and « 72 m² ».
    expect(indexerSources({ question: '', resultats: [{ taux_vente_12m_pct: null }] }).nombres).toContain(12);
    expect(indexerSources({ question: '', resultats: [[{}, {}, {}]] }).nombres).toContain(3);
  });

  it('survives what JSON cannot hold and deep nesting', () => {
    let profond: unknown = 5;
    for (let i = 0; i < 1000; i++) profond = [profond];
    const bizarre = { a: Number.NaN, b: Infinity, c: undefined, d: null, e: true, f: 10n };
    expect(() => indexerSources({ question: '', resultats: [profond, bizarre] })).not.toThrow();
    expect(indexerSources({ question: '', resultats: [bizarre] }).nombres).toContain(10);
  });
});

describe('verifierChiffres: what the sources support', () => {
  it.each([
    ['a price rounded to the euro', 'Le prix est de 3 412 €/m².'],
    ['the same price from a numeric string', 'La vente de 2023 : 3 422 €/m².'],
    ['a price in k€', 'soit 3,4 k€ du m²'],
    ['a price in k€ at one more digit', 'soit 3,41 k€ du m²'],
    ['a price in M€', 'la maison, 1,2 M€'],
    ['a price in million(s) d’euros', "la maison est partie à 1,2 million d'euros, puis 1,19 million d’euros"],
    ['an exact amount grouped with U+202F', 'vendu 245\u202f000 €'],
    ['an exact amount grouped with U+00A0', 'vendu 245\u00a0000 €'],
    ['an exact amount grouped with spaces', 'vendu 245 000 €'],
    ['a rounded amount, trailing zeros', 'vendu environ 250 000 €'],
    ['a surface with the decimal comma', 'une surface de 71,8 m²'],
    ['a surface rounded', 'une surface de 72 m²'],
    ['a decimal rounded to fewer decimals', 'le prix médian est de 4 512,5 €/m², soit 4 513 €/m² arrondi'],
    ['a percentage from a source percentage', 'le taux de vente est de 4,7 % par an, environ 5 %'],
    ['a percentage from a source ratio', 'le vitrage fait 12,3 % de la façade, soit 12 %'],
    ['a negative percentage', 'le volume varie de −3,2 % (-3 % arrondi)'],
    ['a fall carried by words', 'le volume a baissé de 3,2 %'],
    ['a count of sales', '1 843 ventes au T4 2024, 7 215 sur l’année'],
    ['a count read off a list', 'Trois ventes sont connues : 3 ventes à cette adresse.'],
    ['a day date in French', 'vendu le 1er mars 2024, le 1 mars 2024, le 1ᵉʳ mars 2024'],
    ['a day date in ISO and numeric forms', 'vendu le 2024-03-01 (01/03/2024)'],
    ['a month', 'vendu en mars 2024 (03/2024), un DPE de janvier 2025'],
    ['a quarter', 'au T1 2025, au 4e trimestre 2024'],
    ['a day without its year', 'vendu le 17 novembre'],
    ['a timestamp’s day', 'DPE établi le 15 janvier 2025'],
    ['years of dates present', 'entre 2022 et 2024, en 2023'],
    ['a range within the sources', 'de 3 400 à 3 420 €/m², entre 4 et 5 %'],
    ['a percentage range from a percentage and a ratio', 'entre 4,7 et 12,3 %'],
    ['figures of the question', 'Votre objectif de 260 000 € net vendeur pour 72 m²'],
    ['an INSEE and a postal code present in the sources', 'Bordeaux (INSEE 33063, 33000)'],
    ['rooms present in the sources', 'un 3 pièces, un 2 pièces, une maison de 6 pièces'],
    ['a duration named in a field', 'sur 12 mois glissants'],
  ])('%s', (_cas, reponse) => {
    const verification = verifier(reponse);
    expect(verification.liste_non_verifies).toEqual([]);
    expect(verification.non_verifies).toBe(0);
    expect(verification.chiffres).toBeGreaterThan(0);
    expect(verification.texte).toBe(reponse);
  });
});

describe('verifierChiffres: invented figures are marked and counted', () => {
  it.each([
    ['a price no result gave', 'Le prix est de 3 650 €/m².', ['3 650 €/m²']],
    ['a price at a finer precision than the source', 'Le prix est de 3 411,50 €/m².', ['3 411,50 €/m²']],
    ['a round price that is not a rounding of the source', 'Le prix est de 3 500 €/m².', ['3 500 €/m²']],
    ['another round price', 'Le prix est de 3 000 €/m².', ['3 000 €/m²']],
    ['k€ off by one digit', 'soit 3,5 k€ du m²', ['3,5 k€ du m²']],
    ['a percentage off by one point', 'le taux de vente est de 5,7 %', ['5,7 %']],
    ['a percentage from a ratio off by one point', 'le vitrage fait 13 % de la façade', ['13 %']],
    ['a count of sales that differs', '1 844 ventes au T4 2024', ['1 844']],
    ['a count of sales at this address that differs', '8 ventes à cette adresse', ['8']],
    ['a day not in the sources', 'vendu le 2 mars 2024', ['2 mars 2024']],
    ['an ISO day not in the sources', 'vendu le 2024-03-02', ['2024-03-02']],
    ['a month not in the sources', 'vendu en avril 2024', ['avril 2024']],
    ['a quarter not in the sources', 'au T2 2025', ['T2 2025']],
    ['a year not in the sources', 'depuis 2015', ['2015']],
    ['a surface that differs', 'une surface de 75 m²', ['75 m²']],
    ['a code that is not in the sources', 'INSEE 33064', ['33064']],
    ['a million that differs', "1,3 million d'euros", ["1,3 million d'euros"]],
    ['millions of euros from a small decimal of the sources', 'un budget de 0,97 M€', ['0,97 M€']],
    ['a range partly invented', 'de 3 400 à 3 700 €/m²', ['3 700 €/m²']],
  ])('%s', (_cas, reponse, attendus) => {
    const verification = verifier(reponse);
    expect(verification.liste_non_verifies).toEqual(attendus);
    expect(verification.non_verifies).toBe(attendus.length);
    expect(verification.texte).toContain(`${attendus.at(-1)}${MARQUE_NON_VERIFIE}`);
  });

  it('holds a written sign to the sign of the source', () => {
    const sources = { question: '', resultats: [{ evolution_volume_pct: -3.2 }] };
    expect(verifierChiffres('le volume varie de +3,2 %', sources).liste_non_verifies).toEqual(['+3,2 %']);
    expect(verifierChiffres('le volume varie de −3,2 %', sources).non_verifies).toBe(0);
    expect(verifierChiffres('le volume a baissé de 3,2 %', sources).non_verifies).toBe(0);
    const hausse = { question: '', resultats: [{ evolution_volume_pct: 3.2 }] };
    expect(verifierChiffres('le volume varie de -3,2 %', hausse).liste_non_verifies).toEqual(['-3,2 %']);
  });

  it('counts every figure and lists the unverified ones in order', () => {
    const verification = verifier(
      'Le prix médian est de 3 412 €/m² (DVF, 1er mars 2024), contre 3 650 €/m² en 2019 ; rendement de 5,4 %.',
    );
    expect(verification.chiffres).toBe(5);
    expect(verification.liste_non_verifies).toEqual(['3 650 €/m²', '2019', '5,4 %']);
    expect(verification.texte).toBe(
      'Le prix médian est de 3 412 €/m² (DVF, 1er mars 2024), contre 3 650 €/m² [non vérifié] en 2019 [non vérifié] ; ' +
        'rendement de 5,4 % [non vérifié].',
    );
  });

  it('marks a mutated answer: changing any figure of a verified answer is caught', () => {
    const reponse =
      'Au 12 rue des Lilas (INSEE 33063), 3 ventes : 245 000 € le 1er mars 2024 pour 71,8 m², soit 3 412 €/m² ; ' +
      'le volume a baissé de 3,2 % en 2024 et le prix médian de la commune est de 4 512,5 €/m² au T4 2024.';
    expect(verifier(reponse).non_verifies).toBe(0);
    const mutations: Array<[string, string]> = [
      ['33063', '33065'],
      ['3 ventes', '8 ventes'],
      ['245 000 €', '285 000 €'],
      ['1er mars 2024', '1er mai 2024'],
      ['71,8 m²', '78,1 m²'],
      ['3 412 €/m²', '3 421 €/m²'],
      ['3,2 %', '2,3 %'],
      ['en 2024', 'en 2021'],
      ['4 512,5 €/m²', '4 521,5 €/m²'],
      ['T4 2024', 'T3 2024'],
    ];
    for (const [avant, apres] of mutations) {
      expect(reponse).toContain(avant);
      const verification = verifier(reponse.replace(avant, apres));
      expect(verification.non_verifies, apres).toBe(1);
      expect(verification.liste_non_verifies[0], apres).toBe(apres.replace(/^en /, '').replace(/ ventes$/, ''));
    }
  });

  it('trusts nothing without sources', () => {
    const verification = verifierChiffres('Le prix est de 3 412 €/m² depuis le 1er mars 2024.', {
      question: '',
      resultats: [],
    });
    expect(verification.non_verifies).toBe(2);
  });
});

describe('verifierChiffres: no false alarm', () => {
  it('ignores numbering, headings, ordinals, identifiers and references', () => {
    const reponse = [
      '## 1. Synthèse',
      '### 2.1 Ventes',
      '1. Un **T3** au 2e étage (R+2), zone UA10, au 1er trimestre.',
      '2. Mutation 2024-1234567, parcelle 33063000AB0123, clé 33063_1234_00012.',
      '3. Voir l’article L. 123-1 du code de l’urbanisme et la note [1].',
      '',
      '[1]: https://www.data.gouv.fr/fr/datasets/5c4ae55a634f4117716d5656/',
    ].join('\n');
    const verification = verifier(reponse);
    expect(verification.chiffres).toBe(0);
    expect(verification.texte).toBe(reponse);
  });

  it('takes a figure found verbatim in a result even where its reading is unusual', () => {
    const resultats = [{ reference: 'Lot 0042', volume: '1.234' }];
    const verification = verifierChiffres('Lot 0042, volume 1.234', { question: '', resultats });
    expect(verification.non_verifies).toBe(0);
  });
});

describe('verifierChiffres: the mark keeps the Markdown whole', () => {
  it('goes after the emphasis that closes on the figure', () => {
    expect(verifier('Prix : **3 650 €/m²**.').texte).toBe('Prix : **3 650 €/m²**' + MARQUE_NON_VERIFIE + '.');
    expect(verifier('Prix : *3 650 €*, _3 650 €_ et ~~3 650 €~~').texte).toBe(
      `Prix : *3 650 €*${MARQUE_NON_VERIFIE}, _3 650 €_${MARQUE_NON_VERIFIE} et ~~3 650 €~~${MARQUE_NON_VERIFIE}`,
    );
    expect(verifier('**Prix de 3 650 € en hausse**').texte).toBe(`**Prix de 3 650 €${MARQUE_NON_VERIFIE} en hausse**`);
  });

  it('keeps a table’s cells and pipes', () => {
    const tableau = ['| Date | Prix |', '|---|---:|', '| 2024-03-01 | 245 000 € |', '| 2024-04-02 | 189 000 € |'].join(
      '\n',
    );
    const { texte, liste_non_verifies } = verifier(tableau);
    expect(liste_non_verifies).toEqual(['2024-04-02', '189 000 €']);
    expect(texte.split('\n').map((ligne) => ligne.split('|').length)).toEqual([4, 4, 4, 4]);
    expect(texte.split('\n')[3]).toBe(`| 2024-04-02${MARQUE_NON_VERIFIE} | 189 000 €${MARQUE_NON_VERIFIE} |`);
  });

  it('never makes a link of the mark', () => {
    expect(verifier('3 650 €(DVF)').texte).toBe(`3 650 €${MARQUE_NON_VERIFIE} (DVF)`);
    expect(verifier('[3 650 €](https://exemple.fr)').texte).toBe(`[3 650 €${MARQUE_NON_VERIFIE}](https://exemple.fr)`);
  });

  it('marks each figure once, whatever the number of checks', () => {
    const premiere = verifier('Prix : 3 650 €/m² et 3 412 €/m².');
    const seconde = verifier(premiere.texte);
    expect(seconde.texte).toBe(premiere.texte);
    expect(seconde.non_verifies).toBe(1);
  });

  it('marks both ends of an invented range', () => {
    expect(verifier('de 3 600 à 3 700 €/m²').texte).toBe(
      `de 3 600${MARQUE_NON_VERIFIE} à 3 700 €/m²${MARQUE_NON_VERIFIE}`,
    );
  });
});

describe('verifierChiffres: a whole answer', () => {
  const reponse = [
    '## Estimation du 12 rue des Lilas',
    '',
    'Votre **T3 de 72 m²** se situe à Bordeaux (33000). Trois ventes DVF sont connues à cette adresse :',
    '',
    '| Date | Type | Surface | Prix | Prix au m² |',
    '|---|---|---:|---:|---:|',
    '| 1er mars 2024 | Appartement | 71,8 m² | 245 000 € | 3 412 €/m² |',
    '| 17/11/2023 | Appartement | 58 m² | 198 500 € | 3 422 €/m² |',
    '| 30 juin 2022 | Maison | 182,5 m² | 1,19 M€ | 6 493 €/m² |',
    '',
    '1. Le prix médian de la commune est de **4 512,5 €/m²** au T4 2024 (1 843 ventes).',
    '2. Le volume a baissé de 3,2 % entre 2023 et 2024.',
    '3. Le DPE du 15 janvier 2025 est en classe D (212 kWh/m²).',
    '',
    'Votre objectif de 260 000 € net vendeur est donc réaliste, entre 3 400 et 3 420 €/m² [1].',
  ].join('\n');

  it('passes untouched when every figure comes from the tools or the question', () => {
    const verification = verifier(reponse);
    expect(verification.liste_non_verifies).toEqual([]);
    expect(verification.texte).toBe(reponse);
    expect(verification.chiffres).toBe(26);
  });

  it('marks the one figure the model invented', () => {
    const inventee = reponse.replace('(1 843 ventes)', '(1 843 ventes, rendement brut de 4,8 %)');
    const verification = verifier(inventee);
    expect(verification.liste_non_verifies).toEqual(['4,8 %']);
    expect(verification.texte).toBe(inventee.replace('4,8 %', `4,8 %${MARQUE_NON_VERIFIE}`));
  });
});

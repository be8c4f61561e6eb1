import { beforeAll, describe, expect, it } from 'vitest';
import {
  createQuotationIndex,
  normalizeForComparison,
  quotationKey,
  type QuotationIndex,
} from '../../../domain/plu/citations.ts';
import { hasLatresne, LATRESNE_CHAPTERS, latresne, SKIP_REASON } from './latresne.ts';

describe('normalizeForComparison', () => {
  it('treats typography alike on both sides', () => {
    const n = normalizeForComparison;
    expect(n('la ﬁn des ﬂeurs')).toBe(n('la fin des fleurs'));
    expect(n('Œuvre, cœur, ex æquo')).toBe(n('oeuvre, coeur, ex aequo'));
    expect(n('construc\u00adtions')).toBe(n('constructions'));
    expect(n('construc-\ntions nouvelles')).toBe(n('constructions nouvelles'));
    expect(n('rez-de-\nchaussée')).toBe(n('rez-de-chaussée'));
    expect(n('l’égout du toit')).toBe(n("l'égout du toit"));
    expect(n('« toit terrasse »')).toBe(n('"toit terrasse"'));
    expect(n('“toit” ‘terrasse’ 10″')).toBe(n('"toit" \'terrasse\' 10"'));
    expect(n('ARTICLE  UA10\u00a0:\n HAUTEUR')).toBe(n('article UA10 : hauteur'));
    expect(n('12 m – 3,50 m²')).toBe(n('12m - 3,50 m2'));
  });

  it('keeps accents', () => {
    expect(normalizeForComparison('égout')).not.toBe(normalizeForComparison('egout'));
    expect(normalizeForComparison('e\u0301gout')).toBe(normalizeForComparison('égout'));
  });

  it('makes a de-duplication key without the surrounding punctuation', () => {
    expect(quotationKey('« La hauteur est limitée à 9 m. »')).toBe(quotationKey('La hauteur est limitée à 9 m'));
  });
});

describe('quotation index, synthetic pages', () => {
  const header = 'PLU DE TESTVILLE\nRèglement écrit\n';
  const footer = (n: number) => `Approuvé le 1er mars 2020\n- ${n} -\n`;
  const pages = [
    `${header}TITRE I - DISPOSITIONS GENERALES\nLes règles du présent titre valent pour toutes les zones.\n${footer(1)}`,
    `${header}ZONE UA\nArticle UA 7 - Les constructions seront implantées à une distance des limites\nséparatives au moins égale à la moitié de leur hauteur, sans être inférieure à\n${footer(2)}`,
    `${header}3 mètres. Les piscines seront implantées à 2 mètres au moins des limites.\nLes annexes ne dépasseront pas 20 m² d'emprise au sol.\n${footer(3)}`,
    `${header}ZONE UB\nLes clôtures sur rue auront une hauteur maximale de 1,50 mètre.\n${footer(4)}`,
    '',
  ];
  const index = createQuotationIndex(pages);
  const ua = { first: 2, last: 3 };

  it('finds a quotation that runs over a page break, running header and footer aside', () => {
    const citation =
      'au moins égale à la moitié de leur hauteur, sans être inférieure à 3 mètres. Les piscines seront implantées';
    expect(index.locate(citation, 2, ua)).toEqual({ found: true, page: 2, aConfirmer: false });
    expect(index.locate(citation, 3, ua)).toEqual({ found: true, page: 2, aConfirmer: false });
    expect(index.locate(citation, null)).toEqual({ found: true, page: 2, aConfirmer: true });
  });

  it('corrects a page off by one, and flags one found far away', () => {
    const citation = "Les annexes ne dépasseront pas 20 m² d'emprise au sol.";
    expect(index.locate(citation, 4)).toEqual({ found: true, page: 3, aConfirmer: false });
    expect(index.locate(citation, 1)).toEqual({ found: true, page: 3, aConfirmer: true });
    expect(index.locate(citation, 99, ua)).toEqual({ found: true, page: 3, aConfirmer: false });
  });

  it('flags a quotation outside the given chapter', () => {
    const citation = 'Les clôtures sur rue auront une hauteur maximale de 1,50 mètre.';
    expect(index.locate(citation, 4, ua)).toEqual({ found: true, page: 4, aConfirmer: true });
    expect(index.locate(citation, 4, [ua, { first: 1, last: 1 }])).toMatchObject({ aConfirmer: true });
    expect(index.locate(citation, 4, [ua, { first: 4, last: 4 }])).toMatchObject({ aConfirmer: false });
  });

  it('refuses short, invented or empty quotations', () => {
    expect(index.locate('ZONE UA', 2)).toEqual({ found: false, page: null, aConfirmer: false });
    expect(index.locate('Les piscines seront', 3).found).toBe(false);
    expect(index.locate('Les piscines seront implantées à 5 mètres au moins des limites.', 3).found).toBe(false);
    expect(index.locate('', 3).found).toBe(false);
    expect(createQuotationIndex([]).locate('Les piscines seront implantées à 2 mètres', 1).found).toBe(false);
  });

  it('accepts an elided quotation only when its parts follow each other on the page', () => {
    expect(index.locate('Les constructions seront implantées […] la moitié de leur hauteur', 2).found).toBe(true);
    expect(index.locate('la moitié de leur hauteur … Les constructions seront implantées', 2).found).toBe(false);
  });
});

describe.skipIf(!hasLatresne)(`quotation index, Latresne rules ${hasLatresne ? '' : SKIP_REASON}`, () => {
  let index: QuotationIndex;
  beforeAll(async () => {
    index = createQuotationIndex((await latresne()).pages);
  });
  const UA = LATRESNE_CHAPTERS.UA;

  it('finds a verbatim quotation on its page', () => {
    const citation =
      "10.1 - La hauteur maximale des constructions nouvelles est fixée à 12m au faîtage et à 9 m à l'égout du toit";
    expect(index.locate(citation, 15, UA)).toEqual({ found: true, page: 15, aConfirmer: false });
  });

  it('finds a quotation with other apostrophes, spacing and line-end hyphenation', () => {
    // The PDF has straight apostrophes here and "12m"; the model wrote typographic ones and "12 m".
    expect(index.locate('fixée à 12 m au faîtage et à 9 m à l’égout du toit ou à l’acrotère', 15, UA)).toMatchObject({
      found: true,
      page: 15,
    });
    // The PDF has "d’exhaussement" (typographic) where the model may type a straight one.
    expect(index.locate("avant les travaux d'exhaussement ou d'affouillements du sol", 15, UA).found).toBe(true);
    // "gris-\nbeige" is split at a line end on page 70 (zone A).
    expect(index.locate('pour les menuiseries : blanc cassé, gris-beige, sable', 70)).toEqual({
      found: true,
      page: 70,
      aConfirmer: false,
    });
  });

  it('finds a quotation that spans a page break', () => {
    const citation =
      'Les ouvertures en toiture seront obligatoirement dans la pente du toit. Façades 11.5 - Respecter et reprendre les proportions des baies anciennes';
    expect(index.locate(citation, 15, UA)).toEqual({ found: true, page: 15, aConfirmer: false });
    expect(index.locate(citation, 16, UA)).toEqual({ found: true, page: 15, aConfirmer: false });
  });

  it('does not find an invented quotation', () => {
    const citation = 'La hauteur maximale des constructions nouvelles est fixée à 15m au faîtage';
    expect(index.locate(citation, 15, UA)).toEqual({ found: false, page: null, aConfirmer: false });
  });

  it('flags a quotation from another zone’s chapter', () => {
    const citation = 'La hauteur maximale des constructions nouvelles est fixée à 8 m au faîtage';
    expect(index.locate(citation, 15, UA)).toEqual({ found: true, page: 25, aConfirmer: true });
  });

  it('prefers the occurrence within the chapter for text repeated in every zone', () => {
    const citation =
      "Il n'est pas fixé de règle pour les constructions et installation techniques nécessaires aux réseaux";
    expect(index.locate(citation, 25, UA)).toEqual({ found: true, page: 15, aConfirmer: false });
    expect(index.locate(citation, 25, LATRESNE_CHAPTERS.UB)).toEqual({ found: true, page: 25, aConfirmer: false });
  });
});

import { describe, expect, it } from 'vitest';
import { locateGeneralProvisions, locateZoneChapter } from '../../../domain/plu/chapters.ts';
import { hasLatresne, LATRESNE_CHAPTERS, latresne, SKIP_REASON } from './latresne.ts';

describe.skipIf(!hasLatresne)(`chapters of the Latresne rules ${hasLatresne ? '' : SKIP_REASON}`, () => {
  it('finds every zone (PDF pages: printed page + 4)', async () => {
    const { pages } = await latresne();
    for (const [zone, chapter] of Object.entries(LATRESNE_CHAPTERS)) {
      expect(locateZoneChapter(pages, zone), zone).toEqual(chapter);
    }
  });

  it('tells A from 1AU and AU, and gives a sector its zone', async () => {
    const { pages } = await latresne();
    expect(locateZoneChapter(pages, 'A')).toEqual({ first: 65, last: 72 });
    expect(locateZoneChapter(pages, '1AU')).toEqual({ first: 55, last: 64 });
    expect(locateZoneChapter(pages, 'AU')).toBeNull();
    expect(locateZoneChapter(pages, '2AU')).toBeNull();
    expect(locateZoneChapter(pages, 'UD')).toBeNull();
    expect(locateZoneChapter(pages, 'UCr')).toEqual(LATRESNE_CHAPTERS.UC);
    expect(locateZoneChapter(pages, 'Aot')).toEqual(LATRESNE_CHAPTERS.A);
    expect(locateZoneChapter(pages, '1AUh')).toEqual(LATRESNE_CHAPTERS['1AU']);
    expect(locateZoneChapter(pages, 'Ub')).toEqual(LATRESNE_CHAPTERS.UB);
  });

  it('finds the general provisions, not the table of contents', async () => {
    const { pages } = await latresne();
    expect(locateGeneralProvisions(pages)).toEqual({ first: 5, last: 8 });
  });
});

describe('chapters, synthetic documents', () => {
  it('skips a table of contents and a list of zones, and ends a chapter at the next zone or part', () => {
    const pages = [
      'SOMMAIRE\nDISPOSITIONS APPLICABLES A LA ZONE UA .......... 3\nDISPOSITIONS APPLICABLES A LA ZONE 1AU ........ 5\nZONE A ........ 6\nANNEXES ....... 7\n',
      'TITRE I - DISPOSITIONS GENERALES\nArticle 3 - Division du territoire\nZone UA : centre ancien\nZone 1AU : extension future\nZone A : zone agricole\n',
      'DISPOSITIONS APPLICABLES A LA ZONE UA\nUA1 – Destinations interdites\nLes entrepôts.\n',
      'UA2 – Hauteur\nLa hauteur est limitée à 9 m. En limite de la zone 1AU, elle est de 7 m.\n',
      'Chapitre 2 : Dispositions applicables à la zone 1AU\n1AU1 – Destinations\n',
      'ZONE A\nArticle A 1 - Occupations interdites\n',
      'ANNEXES\nListe des emplacements réservés\n',
    ];
    expect(locateZoneChapter(pages, 'UA')).toEqual({ first: 3, last: 4 });
    expect(locateZoneChapter(pages, '1AU')).toEqual({ first: 5, last: 5 });
    expect(locateZoneChapter(pages, 'A')).toEqual({ first: 6, last: 6 });
    expect(locateZoneChapter(pages, 'AU')).toBeNull();
    expect(locateGeneralProvisions(pages)).toEqual({ first: 2, last: 2 });
  });

  it('uses article headings when there is no zone heading, and keeps a shared page', () => {
    const pages = [
      'ARTICLE UB 1 : OCCUPATIONS INTERDITES\nTexte.\n',
      'ARTICLE UB10 : HAUTEUR\nLa hauteur est limitée à 8 m.\nARTICLE UC 1 : OCCUPATIONS INTERDITES\n',
      'ARTICLE UC10 : HAUTEUR\n',
    ];
    expect(locateZoneChapter(pages, 'UB')).toEqual({ first: 1, last: 2 });
    expect(locateZoneChapter(pages, 'UC')).toEqual({ first: 2, last: 3 });
  });

  it('reads a running zone header on every page', () => {
    const pages = ['ZONE UB\nTexte.\n', 'ZONE UB\nSuite.\n', 'ZONE UC\nTexte.\n', 'ZONE UC\nFin.\n'];
    expect(locateZoneChapter(pages, 'UB')).toEqual({ first: 1, last: 2 });
    expect(locateZoneChapter(pages, 'UC')).toEqual({ first: 3, last: 4 });
  });

  it('does not take words or legal articles for zones', () => {
    const pages = [
      'ZONE UA\nDans la zone de bruit, les façades sont isolées.\nZONE DE\nArticle L 151-19 - éléments protégés\nArticle R 111-2\n',
      'ZONES A URBANISER\n',
    ];
    expect(locateZoneChapter(pages, 'UA')).toEqual({ first: 1, last: 2 });
    expect(locateZoneChapter(pages, 'DE')).toBeNull();
    expect(locateZoneChapter(pages, 'L')).toBeNull();
    expect(locateZoneChapter(pages, 'A')).toBeNull();
    expect(locateZoneChapter(pages, '')).toBeNull();
  });
});

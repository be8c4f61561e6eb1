import { describe, expect, it } from 'vitest';
import { choisirEchelle } from '../../../domain/dossiers/dessins.ts';
import { verifierNotice } from '../../../domain/dossiers/notice.ts';

describe('the notice’s figures', () => {
  const faits = { terrain: { superficie_m2: 600 }, projets: [{ emprise_m2: 15, hauteur_m: 3, largeur_m: 5 }] };

  it('keeps the sentences whose figures are the dossier’s, removes and counts the others', () => {
    const v = verifierNotice(
      {
        terrain: ['Le terrain de 600 m² porte une maison. Il a été acheté 250 000 € en 2019.'],
        projet: ['Une extension de 15 m², haute de 3 m. Sa façade de 5 m est percée d’une baie de 2,40 m.'],
      },
      faits,
    );
    expect(v.terrain).toEqual(['Le terrain de 600 m² porte une maison.']);
    expect(v.projet).toEqual(['Une extension de 15 m², haute de 3 m.']);
    // 250 000 €, 2019 and 2,40 m (5 m would pass alone, its sentence goes with the 2,40 m).
    expect(v.ecartes).toBe(3);
  });

  it('drops a paragraph left empty', () => {
    expect(verifierNotice({ terrain: ['Le terrain fait 900 m².'], projet: ['Sans chiffre.'] }, faits)).toEqual({
      terrain: [],
      projet: ['Sans chiffre.'],
      ecartes: 1,
    });
  });
});

describe('the scale of a sheet', () => {
  it.each([
    // Landscape A4 draws 277 × 158 mm, A3 400 × 245 mm (margins and title block off).
    [27, 15, 100, 'A4'],
    [35, 20, 100, 'A3'],
    [50, 30, 200, 'A4'],
    [75, 45, 200, 'A3'],
    [130, 70, 500, 'A4'],
    [190, 120, 500, 'A3'],
  ])('%f × %f m → 1/%i on %s', (l, h, echelle, format) => {
    expect(choisirEchelle(l, h)).toEqual({ echelle, format, tient: true });
  });

  it('says when even 1/500 on A3 is too small', () => {
    expect(choisirEchelle(250, 100)).toEqual({ echelle: 500, format: 'A3', tient: false });
  });
});

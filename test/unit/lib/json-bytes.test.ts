import { describe, expect, it } from 'vitest';
import { constant, jsonBytes } from '../../../lib/json-bytes.ts';

describe('answers as JSON bytes, with constant parts serialised once', () => {
  const sources = constant(['CGI art. 1635 quater A', 'Valeur : 930 €/m² ; l’assiette', { lien: null }]);
  const valeurs = constant({ libelle: 'Taux « départemental »', valeur: 2.5, sources });

  it('gives exactly the bytes of JSON.stringify, however the constants are placed and repeated', () => {
    const answers = [
      { total: 1234.5, valeurs, sources, liste: [sources, 1, valeurs], texte: 'l’estimation, 12 €' },
      [valeurs],
      valeurs,
      { vide: constant([]), rien: constant({}) },
      // Text that looks like the mark a constant leaves in the text is served as written.
      { piege: '\u0000' + '0'.repeat(36) + ':0', nul: '\u0000', guillemets: '"\\u0000"' },
    ];
    for (const answer of answers) {
      expect(jsonBytes(answer).equals(Buffer.from(JSON.stringify(answer)))).toBe(true);
    }
  });

  it('leaves a constant a plain value everywhere else, and unchangeable', () => {
    expect(JSON.parse(JSON.stringify({ valeurs }))).toEqual({
      valeurs: { libelle: 'Taux « départemental »', valeur: 2.5, sources: [...sources] },
    });
    expect(Object.keys(valeurs)).toEqual(['libelle', 'valeur', 'sources']);
    expect(() => (sources as unknown as string[]).push('x')).toThrow(TypeError);
    expect(() => ((sources[2] as { lien: string | null }).lien = 'x')).toThrow(TypeError);
  });

  it('serialises a constant made of the value at the time it was marked', () => {
    const liste = [1, 2];
    const marque = constant(liste);
    expect(marque).toBe(liste);
    expect(jsonBytes({ marque }).toString()).toBe('{"marque":[1,2]}');
  });
});

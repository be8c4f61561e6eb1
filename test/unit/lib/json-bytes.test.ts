import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { constant, constantText, jsonBytes } from '../../../lib/json-bytes.ts';

describe('answers as JSON bytes, with constant parts serialised once', () => {
  const sources = constant(['CGI art. 1635 quater A', 'Valeur : 930 €/m² ; l’assiette', { lien: null }]);
  const valeurs = constant({ libelle: 'Taux « départemental »', valeur: 2.5, sources });
  const regle = constantText('Taxe = assiette × taux ; 1 234,5 € « arrondi »');

  it('gives exactly the bytes of JSON.stringify, however the constants are placed and repeated', () => {
    const answers = [
      { total: 1234.5, valeurs, sources, liste: [sources, 1, valeurs], texte: 'l’estimation, 12 €' },
      [valeurs],
      valeurs,
      { vide: constant([]), rien: constant({}) },
      // Text that looks like the mark a constant leaves in the text is served as written.
      { piege: '\u0000' + '0'.repeat(36) + ':0', nul: '\u0000', guillemets: '"\\u0000"' },
      // A constant text where an answer's own field holds the same text, and the same text deeper, served as written.
      { regle, formule: `${regle}`, liste: [regle], objet: { regle } },
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

  it('hashes the variable bytes, each constant part by its own digest: a copy of an answer hashes the same', () => {
    const sha = (...chunks: Buffer[]) => createHash('sha256').update(Buffer.concat(chunks)).digest();
    const digestOf = (value: unknown) => {
      const hash = createHash('sha256');
      jsonBytes(value, { hash });
      return hash.digest();
    };
    // Without constant parts, the digest input is the JSON itself.
    const plain = { total: 1234.5, texte: 'l’estimation, 12 €' };
    expect(digestOf(plain).equals(sha(Buffer.from(JSON.stringify(plain))))).toBe(true);
    // Each constant part stands as 0xFF and the SHA-256 of its bytes, wherever it sits.
    const stands = (value: unknown) => Buffer.concat([Buffer.from([0xff]), sha(Buffer.from(JSON.stringify(value)))]);
    const answer = { a: 1, valeurs, regle, liste: [sources] };
    const input = Buffer.concat([
      Buffer.from('{"a":1,"valeurs":'),
      stands(valeurs),
      Buffer.from(',"regle":'),
      stands(regle),
      Buffer.from(',"liste":['),
      stands(sources),
      Buffer.from(']}'),
    ]);
    expect(digestOf(answer).equals(sha(input))).toBe(true);
    // Another answer (one number differs) has another digest; a copy of the same answer has the same.
    expect(digestOf({ ...answer, a: 2 }).equals(digestOf(answer))).toBe(false);
    expect(digestOf({ ...answer }).equals(digestOf(answer))).toBe(true);
  });
});

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { constant, constantText, jsonBytes, rawJson } from '../../../lib/json-bytes.ts';

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

describe('JSON text made elsewhere, spliced into answers', () => {
  const texte = '{"id":"an_1","prix":250000.5,"nom":"« L’Agence » \\"x\\"","drapeaux":["date_estimee"],"geo":null}';
  const valeur = JSON.parse(texte);

  it('is copied in as written, and the answer is the one JSON.stringify makes of the value it holds', () => {
    const answer = {
      evenements: [
        { id: '1', annonce: rawJson(texte) },
        { id: '2', annonce: null },
      ],
      a_jour: true,
    };
    const plain = {
      evenements: [
        { id: '1', annonce: valeur },
        { id: '2', annonce: null },
      ],
      a_jour: true,
    };
    expect(jsonBytes(answer).toString()).toBe(JSON.stringify(plain));
    // Beside constants, in any order.
    const mixed = { regle: constantText('Règle « x »'), a: rawJson(texte), b: [rawJson('[1,2]'), constant({ c: 3 })] };
    expect(jsonBytes(mixed).toString()).toBe(
      JSON.stringify({ regle: 'Règle « x »', a: valeur, b: [[1, 2], { c: 3 }] }),
    );
  });

  it('hashes as the same answer serialised in place', () => {
    const digestOf = (value: unknown) => {
      const hash = createHash('sha256');
      jsonBytes(value, { hash });
      return hash.digest('hex');
    };
    expect(digestOf({ a: rawJson(texte), n: 1 })).toBe(digestOf({ a: valeur, n: 1 }));
    expect(digestOf({ a: rawJson(texte) })).not.toBe(digestOf({ a: rawJson(texte.replace('250000.5', '250001')) }));
  });

  it('is the value it holds to everything else: JSON.stringify, property reads, keys', () => {
    const annonce = rawJson<typeof valeur>(texte);
    expect(JSON.parse(JSON.stringify({ annonce }))).toEqual({ annonce: valeur });
    expect(annonce.prix).toBe(250000.5);
    expect(annonce.drapeaux).toEqual(['date_estimee']);
    expect(Object.keys(annonce)).toEqual(Object.keys(valeur));
    expect({ ...annonce }).toEqual(valeur);
    expect('geo' in annonce).toBe(true);
  });
});

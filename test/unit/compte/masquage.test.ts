import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MARQUES, masquerCoordonnees, type SorteCoordonnee } from '../../../domain/compte/masquage.ts';

const SORTES: Record<string, SorteCoordonnee> = { T: 'telephone', C: 'courriel', W: 'contact_web', N: 'nom' };
const CONTACT = /\{\{([TCWN]):(.*?)\}\}/gs;

function decoder(ligne: string): string {
  return ligne
    .replace(/\\u\{([0-9a-fA-F]+)\}/g, (_, hexa: string) => String.fromCodePoint(parseInt(hexa, 16)))
    .replace(/\\n/g, '\n');
}

interface Cas {
  ligne: string;
  texte: string;
  attendu: string;
  /** The contacts as written, for the check that none of their words survives. */
  contacts: string[];
}

const cas: Cas[] = readFileSync(new URL('./coordonnees-corpus.txt', import.meta.url), 'utf8')
  .split('\n')
  .filter((ligne) => ligne.trim() && !ligne.startsWith('#'))
  .map((ligne) => {
    const decodee = decoder(ligne);
    return {
      ligne,
      texte: decodee.replace(CONTACT, (_, __, contact: string) => contact),
      attendu: decodee.replace(CONTACT, (_, sorte: string) => MARQUES[SORTES[sorte]]),
      contacts: [...decodee.matchAll(CONTACT)].map((m) => m[2]),
    };
  });
const avecContacts = cas.filter((c) => c.contacts.length > 0);
const ordinaires = cas.filter((c) => c.contacts.length === 0);

/** Words of a contact that would give it away: digits, local part, domain, name; not "at", "https" or the service. */
const OUTILS = new Set(
  [
    'at',
    'dot',
    'arobase',
    'point',
    'pt',
    'mailto',
    'https',
    'http',
    'wa',
    'me',
    'com',
    'p',
    'api',
    'send',
    'phone',
  ].concat(['chat', 'whatsapp', 'telegram', 'skype', 'signal']),
);
function motsRevelateurs(contact: string): string[] {
  return (contact.replace(/&#?\w+;/g, ' ').match(/[\p{L}\p{N}]+/gu) ?? []).filter(
    (mot) => mot.length > 1 && !OUTILS.has(mot.toLowerCase()),
  );
}
function survit(mot: string, texte: string): boolean {
  const echappe = mot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\p{L}\\p{N}])${echappe}(?![\\p{L}\\p{N}])`, 'iu').test(texte);
}

describe('masquerCoordonnees on the corpus of contacts', () => {
  it.each(avecContacts.map((c) => [c.ligne, c] as const))('%s', (_, c) => {
    const masque = masquerCoordonnees(c.texte);
    for (const contact of c.contacts) {
      for (const mot of motsRevelateurs(contact))
        expect(survit(mot, masque), `${mot} survives in ${masque}`).toBe(false);
    }
    // Only the contacts changed: the words, accents and punctuation around are served as written.
    expect(masque).toBe(c.attendu);
  });
});

describe('masquerCoordonnees on ordinary text', () => {
  it.each(ordinaires.map((c) => [c.texte]))('keeps %s', (texte) => {
    expect(masquerCoordonnees(texte)).toBe(texte);
  });
});

describe('masquerCoordonnees', () => {
  it('masks an accented e-mail whole, never half a word', () => {
    expect(masquerCoordonnees('Écrire à jérôme@exemple.fr.')).toBe('Écrire à [courriel masqué].');
    expect(masquerCoordonnees('Écrire à je\u0301ro\u0302me@exemple.fr.')).toBe('Écrire à [courriel masqué].');
  });

  it('serves the marks a caller asks for, with the same detection', () => {
    expect(masquerCoordonnees('Tél. 06 12 34 56 78, jean(at)exemple.fr', { courriel: '[e-mail masqué]' })).toBe(
      'Tél. [téléphone masqué], [e-mail masqué]',
    );
  });

  it('masks a 50 000-character text full of digits, contact by contact', () => {
    const bloc =
      'Lot 12, 250 000 €, 45 m², signé le 14/03/2025 ; rappeler le 06 12 34 56 78 ou écrire à jean@exemple.fr. ';
    const masque =
      'Lot 12, 250 000 €, 45 m², signé le 14/03/2025 ; rappeler le [téléphone masqué] ou écrire à [courriel masqué]. ';
    const n = Math.ceil(50_000 / bloc.length);
    expect(masquerCoordonnees(bloc.repeat(n))).toBe(masque.repeat(n));
  });

  it('reads 50 000 characters with no contact in them through', () => {
    for (const texte of ['1 2 3 4 5 6 7 8 9 '.repeat(2_800), '0123456789'.repeat(5_000), `${'a'.repeat(50_000)}@`]) {
      expect(masquerCoordonnees(texte)).toBe(texte);
    }
  });
});

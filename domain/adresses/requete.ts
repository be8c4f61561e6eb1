import { anciennesCommunes, toutesLesCommunes } from '../communes.ts';
import {
  estFormeDeType,
  MOTS_OUTILS,
  motsCanoniques,
  normaliserTexte,
  plier,
  typeEnTete,
  TYPES_VOIE,
  uneFauteAuPlus,
} from './normaliser.ts';

/**
 * What a query says, read with the normalisation of the import (normaliser.ts): the number and its repetition index,
 * the street type, the name, the postal or INSEE codes, and the commune named at its end, with the INSEE codes of the
 * communes both designate (the search is bound to them).
 */

export interface Requete {
  numero: number | null;
  /** Repetition index as written, in lower case (`bis`, `b`, `t`, `a`). */
  suffixe: string | null;
  /** Street type (normaliser.ts), null when none is written. */
  type: string | null;
  /** Canonical words of the street or place name: without number, type, codes, nor the commune recognised. */
  mots: string[];
  /** Postal or INSEE codes written (5 characters). */
  codes: string[];
  /** Communes those codes designate (INSEE codes). */
  communesDesCodes: string[];
  /** The commune named at the end of the query, when one is recognised: its words and the communes of that name. */
  commune: { mots: string[]; insee: string[] } | null;
}

const REPETITIONS = new Set(['bis', 'ter', 'quater', 'quinquies']);
const CODE = /^(?:\d{5}|2[ab]\d{3})$/;
// A type misspelt at the start of the name (`boulvard`, `avnue`): the full names it may be, at one typo.
const TYPES_ECRITS_EN_ENTIER = TYPES_VOIE.filter((t) => t.length >= 5 && !t.includes(' '));

/** The type of a misspelt word (one typo in a type's full name of 5 letters or more), or null. */
function typeMalEcrit(mot: string | undefined): string | null {
  if (!mot || mot.length < 5 || /\d/.test(mot)) return null;
  return TYPES_ECRITS_EN_ENTIER.find((t) => uneFauteAuPlus(t, mot)) ?? null;
}

/** Reads a query. */
export function analyserRequete(q: string): Requete {
  const tokens = plier(q).split(' ').filter(Boolean);
  let numero: number | null = null;
  let suffixe: string | null = null;
  const first = /^(\d{1,4})(bis|ter|quater|quinquies|[a-z])?$/.exec(tokens[0] ?? '');
  if (first && tokens.length > 1) {
    numero = Number(first[1]);
    suffixe = first[2] ?? null;
    tokens.shift();
    const next = tokens[0];
    if (!suffixe && tokens.length > 1) {
      if (REPETITIONS.has(next)) suffixe = tokens.shift()!;
      // A letter before the street type is an index (`12 A RUE X`, `27 B BD Y`); a letter that is itself a type is
      // the type (`12 R DE LA PAIX`); otherwise a letter is an index unless it reads as a word (à, d', l', y).
      else if (/^[a-z]$/.test(next) && !estFormeDeType(next)) {
        if (estFormeDeType(tokens[1]) || /^[b-ce-km-xz]$/.test(next)) suffixe = tokens.shift()!;
      }
    }
    // A range (`12-14 rue X`): its first number.
    if (/^\d{1,4}$/.test(tokens[0] ?? '') && tokens.length > 1 && !CODE.test(tokens[0])) tokens.shift();
  }
  const codes = tokens.filter((t) => CODE.test(t));
  const mots = tokens.filter((t) => !CODE.test(t));
  const enTete = typeEnTete(mots);
  const type = enTete?.type ?? typeMalEcrit(mots.length > 1 ? mots[0] : undefined);
  const nom = motsCanoniques(mots.slice(type ? (enTete?.longueur ?? 1) : 0));
  const communesDesCodes = [...new Set(codes.flatMap((c) => index().parCode.get(c.toUpperCase()) ?? []))];
  const commune = communeNommee(nom);
  return {
    numero,
    suffixe,
    type,
    mots: commune ? nom.slice(0, nom.length - commune.mots.length) : nom,
    codes,
    communesDesCodes,
    commune,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Communes by name and by code.
// ---------------------------------------------------------------------------------------------------------------------

interface IndexCommunes {
  /** Postal code or INSEE code → communes. */
  parCode: Map<string, string[]>;
  /** Canonical name → communes. */
  parNom: Map<string, string[]>;
  /** First letter and length of a name → names: where a name written with one typo is looked for. */
  voisins: Map<string, string[]>;
}

let communes: IndexCommunes | undefined;

function ajouter(map: Map<string, string[]>, cle: string, insee: string): void {
  const list = map.get(cle);
  if (!list) map.set(cle, [insee]);
  else if (!list.includes(insee)) list.push(insee);
}

/**
 * The communes of the administrative split (the importers check BAN communes against it): current communes and
 * municipal arrondissements by name, postal code and INSEE code; an arrondissement also by its city's name (`Paris`)
 * and as `Paris 11`; a delegated or associated commune's name gives the commune it belongs to now.
 */
function index(): IndexCommunes {
  if (communes) return communes;
  const parCode = new Map<string, string[]>();
  const parNom = new Map<string, string[]>();
  for (const c of toutesLesCommunes()) {
    ajouter(parCode, c.code, c.code);
    for (const cp of c.codesPostaux) ajouter(parCode, cp, c.code);
    const mots = normaliserTexte(c.nom);
    ajouter(parNom, mots.join(' '), c.code);
    if (c.communeParente) {
      if (mots.at(-1) === 'arrondissement') ajouter(parNom, mots.slice(0, -1).join(' '), c.code);
      ajouter(parNom, mots[0], c.code);
    }
  }
  for (const a of anciennesCommunes()) ajouter(parNom, normaliserTexte(a.nom).join(' '), a.commune);
  const voisins = new Map<string, string[]>();
  for (const nom of parNom.keys()) {
    if (nom.length < 5) continue;
    for (const longueur of [nom.length - 1, nom.length, nom.length + 1]) ajouter(voisins, `${nom[0]}${longueur}`, nom);
  }
  communes = { parCode, parNom, voisins };
  return communes;
}

/** The communes a postal or INSEE code designates. */
export function communesDuCode(code: string): string[] {
  return index().parCode.get(code.toUpperCase()) ?? [];
}

const SPAN_MAX = 6;

/**
 * The commune named by the last words of `mots` (canonical words of the query after its number and type): the
 * longest run of last words that is a commune's name, written exactly or with one typo (names of 5 characters or
 * more). The words left must still name a street (a word other than `de`, `la`…), unless nothing is left and the
 * query is a commune alone or a number or type and a commune (`12 Grande Rue Latresne`): `rue de Paris` names no
 * commune.
 */
function communeNommee(mots: string[]): { mots: string[]; insee: string[] } | null {
  const { parNom, voisins } = index();
  const acceptable = (reste: string[]) =>
    reste.length === 0 ? true : reste.some((m) => !MOTS_OUTILS.has(m) && !/^\d+$/.test(m));
  for (let n = Math.min(SPAN_MAX, mots.length); n >= 1; n--) {
    const reste = mots.slice(0, mots.length - n);
    if (!acceptable(reste)) continue;
    const span = mots.slice(mots.length - n);
    const cle = span.join(' ');
    const insee = parNom.get(cle);
    if (insee) return { mots: span, insee };
    // A longer name with a typo before a shorter one without: `andernos les bains` misspelt is not `bains`.
    if (cle.length < 5) continue;
    const proches = (voisins.get(`${cle[0]}${cle.length}`) ?? []).filter((nom) => uneFauteAuPlus(nom, cle));
    if (proches.length > 0) return { mots: span, insee: [...new Set(proches.flatMap((nom) => parNom.get(nom)!))] };
  }
  return null;
}

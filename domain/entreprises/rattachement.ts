import { createRequire } from 'node:module';
import type { Queryable } from '../../db/client.ts';
import { plier } from '../adresses/resoudre.ts';
import { communeByCode } from '../communes.ts';
import type { Dataset } from '../import/source.ts';

/**
 * Attaching a declared address (a permit's land, a company's seat or establishment) to a BAN number: same commune
 * (or a commune of the postal code), same number, same repetition index, and the same street once both names are
 * folded (case, accents, abbreviations such as R, AV, BD, ST, GAL spelt out, articles dropped). When the full names
 * differ, the names without their street type may decide, if only one BAN number of the commune then agrees. Anything
 * ambiguous stays unattached: a wrong attachment would put a company or a permit at someone else's door.
 */

export interface AdresseDeclaree {
  insee?: string | null;
  codePostal?: string | null;
  /** As written: `12`, `12 B`, `12bis`, `12-14` (the first number is read). */
  numero?: string | null;
  /** A separate repetition index when the source has one (SIRENE's B, T, Q or a letter). */
  suffixe?: string | null;
  /** Street type and name, together or already joined. */
  voie?: string | null;
}

const TYPES: Record<string, string> = {
  r: 'rue',
  rue: 'rue',
  av: 'avenue',
  ave: 'avenue',
  avenue: 'avenue',
  bd: 'boulevard',
  bld: 'boulevard',
  boul: 'boulevard',
  boulevard: 'boulevard',
  ch: 'chemin',
  che: 'chemin',
  chem: 'chemin',
  chemin: 'chemin',
  imp: 'impasse',
  impasse: 'impasse',
  pl: 'place',
  place: 'place',
  all: 'allee',
  allee: 'allee',
  rte: 'route',
  route: 'route',
  sq: 'square',
  square: 'square',
  crs: 'cours',
  cours: 'cours',
  pas: 'passage',
  pass: 'passage',
  passage: 'passage',
  qu: 'quai',
  qua: 'quai',
  quai: 'quai',
  chs: 'chaussee',
  chaussee: 'chaussee',
  prom: 'promenade',
  promenade: 'promenade',
  res: 'residence',
  residence: 'residence',
  lot: 'lotissement',
  lotissement: 'lotissement',
  ham: 'hameau',
  hameau: 'hameau',
  fg: 'faubourg',
  fbg: 'faubourg',
  faubourg: 'faubourg',
  sen: 'sente',
  sente: 'sente',
  sentier: 'sentier',
  vla: 'villa',
  villa: 'villa',
  cite: 'cite',
  mte: 'montee',
  montee: 'montee',
  tra: 'traverse',
  traverse: 'traverse',
  esp: 'esplanade',
  esplanade: 'esplanade',
  rle: 'ruelle',
  ruelle: 'ruelle',
  voie: 'voie',
  parvis: 'parvis',
  rpt: 'rond point',
  carrefour: 'carrefour',
  car: 'carrefour',
};

const MOTS: Record<string, string> = {
  st: 'saint',
  ste: 'sainte',
  gal: 'general',
  gen: 'general',
  mal: 'marechal',
  mar: 'marechal',
  pdt: 'president',
  pres: 'president',
  dr: 'docteur',
  cdt: 'commandant',
  lt: 'lieutenant',
  cne: 'capitaine',
  prof: 'professeur',
  pr: 'professeur',
};

const ARTICLES = new Set('de du des la le les l d a au aux et en sur sous'.split(' '));
const TYPES_PLEINS = new Set(Object.values(TYPES));
const REPETITIONS: Record<string, string> = {
  b: 'bis',
  bis: 'bis',
  t: 'ter',
  ter: 'ter',
  q: 'quater',
  quater: 'quater',
};

/** A street name as compared: folded, abbreviations spelt out, articles dropped; and the same without street type. */
export function voieNormalisee(voie: string): { complete: string; distinctive: string } {
  const mots: string[] = [];
  for (const brut of plier(voie).split(' ')) {
    if (!brut || ARTICLES.has(brut)) continue;
    // A street type comes first, or second after a type given apart (Sitadel's and SIRENE's type column).
    const enTete = mots.length === 0 || (mots.length === 1 && TYPES_PLEINS.has(mots[0]));
    const mot = enTete ? (TYPES[brut] ?? MOTS[brut] ?? brut) : (MOTS[brut] ?? brut);
    // « RUE RUE DE LA PAIX » when the type is also at the head of the name.
    if (mots.length === 1 && mots[0] === mot && TYPES_PLEINS.has(mot)) continue;
    mots.push(mot);
  }
  const sansType = TYPES_PLEINS.has(mots[0] ?? '') ? mots.slice(1) : mots;
  return { complete: mots.join(' '), distinctive: sansType.join(' ') };
}

/** The number and repetition index of `12`, `12 B`, `12bis`, `12 TER`, `12-14`; null without a leading number. */
export function numeroDeclare(numero: string, suffixe?: string | null): { n: number; suffixe: string | null } | null {
  const match = /^\s*0*(\d{1,5})\s*(?:([a-z]+)\b)?/i.exec(plier(numero));
  if (!match) return null;
  const n = Number(match[1]);
  const brut = (suffixe ? plier(suffixe) : (match[2] ?? '')).trim();
  return { n, suffixe: brut ? (REPETITIONS[brut] ?? brut) : null };
}

function memeSuffixe(a: string | null, b: string | null): boolean {
  if (a === null || b === null) return a === b;
  const x = REPETITIONS[a] ?? a;
  const y = REPETITIONS[b] ?? b;
  return x === y || x[0] === y[0];
}

let communesParCodePostal: Map<string, string[]> | undefined;

/** Current communes (or arrondissements) of a postal code, from the `codes-postaux` package. */
export function communesDuCodePostal(codePostal: string): string[] {
  if (!communesParCodePostal) {
    const require = createRequire(import.meta.url);
    const entries = require('codes-postaux/codes-postaux.json') as Array<{ codePostal: string; codeCommune: string }>;
    communesParCodePostal = new Map();
    for (const { codePostal: cp, codeCommune } of entries) {
      if (!communeByCode(codeCommune)) continue;
      const list = communesParCodePostal.get(cp) ?? [];
      if (!list.includes(codeCommune)) list.push(codeCommune);
      communesParCodePostal.set(cp, list);
    }
  }
  return communesParCodePostal.get(codePostal) ?? [];
}

interface Candidat {
  cle_ban: string;
  insee: string;
  numero: number;
  suffixe: string | null;
  voie: string | null;
  code_postal: string | null;
}

/** The BAN key of each declared address, or null when none or several numbers fit. */
export async function clesBan(
  db: Queryable,
  dataset: Dataset,
  adresses: AdresseDeclaree[],
): Promise<Array<string | null>> {
  const lues = adresses.map((a) => {
    const numero = a.numero ? numeroDeclare(a.numero, a.suffixe) : null;
    const voie = a.voie ? voieNormalisee(a.voie) : null;
    if (!numero || !voie?.complete) return null;
    const communes = a.insee ? [a.insee] : a.codePostal ? communesDuCodePostal(a.codePostal) : [];
    if (communes.length === 0) return null;
    return { numero, voie, communes, codePostal: a.codePostal ?? null };
  });
  const paires = new Map<string, [string, number]>();
  for (const l of lues) {
    for (const insee of l?.communes ?? []) paires.set(`${insee}|${l!.numero.n}`, [insee, l!.numero.n]);
  }
  if (paires.size === 0) return adresses.map(() => null);
  const { rows } = await db.query<Candidat>(
    `SELECT a.cle_ban, a.insee, a.numero, a.suffixe, a.voie, a.code_postal
       FROM unnest($2::text[], $3::int[]) AS k(insee, numero)
       JOIN adresses a ON a.dataset = $1 AND a.insee = k.insee AND a.numero = k.numero
      WHERE a.type = 'numero'`,
    [dataset, [...paires.values()].map(([i]) => i), [...paires.values()].map(([, n]) => n)],
  );
  const parPaire = new Map<string, Array<Candidat & { norme: ReturnType<typeof voieNormalisee> }>>();
  for (const row of rows) {
    const k = `${row.insee}|${row.numero}`;
    const list = parPaire.get(k) ?? [];
    list.push({ ...row, norme: voieNormalisee(row.voie ?? '') });
    parPaire.set(k, list);
  }
  return lues.map((l) => {
    if (!l) return null;
    const candidats = l.communes
      .flatMap((insee) => parPaire.get(`${insee}|${l.numero.n}`) ?? [])
      .filter((c) => memeSuffixe(c.suffixe, l.numero.suffixe));
    let retenus = candidats.filter((c) => c.norme.complete === l.voie.complete);
    if (retenus.length === 0 && l.voie.distinctive) {
      retenus = candidats.filter((c) => c.norme.distinctive === l.voie.distinctive);
    }
    if (retenus.length > 1 && l.codePostal) {
      const memeCp = retenus.filter((c) => c.code_postal === l.codePostal);
      if (memeCp.length > 0) retenus = memeCp;
    }
    return retenus.length === 1 ? retenus[0].cle_ban : null;
  });
}

import type { Db } from '../../db/client.ts';
import { transaction } from '../../db/client.ts';
import { jour } from '../entrees.ts';
import { ApiError, type FieldError } from '../errors.ts';
import {
  colonne,
  operateursDe,
  OPERATEURS,
  type Colonne,
  type JeuDisponible,
  type Operateur,
  type TypeColonne,
} from './registre.ts';

/**
 * Filters of the datasets, from what a client sends to parameterised SQL. A query string carries them as flat keys
 * (`filtre[code_commune][eq]=33001`), a tool call as an object (`{"filtre": {"code_commune": {"eq": "33001"}}}`): both
 * are read here alike. A column or an operator is only ever one the registry declares; a value only ever a parameter.
 */

export const FILTRES_MAX = 12;

export interface Filtre {
  colonne: Colonne;
  operateur: Operateur;
  /** Parsed by the column's type: one value, a list (in), two bounds (entre), a boolean (nul). */
  valeur: unknown;
}

const CLE_FILTRE = /^filtre\[([^\]]*)\]\[([^\]]*)\]$/;

/** A filter as sent, before its column is known: where it came from (its field), its column, operator and value. */
interface FiltreBrut {
  champ: string;
  colonne: string;
  operateur: string;
  valeur: unknown;
}

/** The filters an input sends, flat or as an object, each with the field a refusal names. */
export function filtresBruts(input: Record<string, unknown>): { filtres: FiltreBrut[]; erreurs: FieldError[] } {
  const filtres: FiltreBrut[] = [];
  const erreurs: FieldError[] = [];
  for (const [cle, valeur] of Object.entries(input)) {
    const m = CLE_FILTRE.exec(cle);
    if (m) filtres.push({ champ: cle, colonne: m[1]!, operateur: m[2]!, valeur });
  }
  const objet = input.filtre;
  if (objet !== undefined) {
    if (typeof objet !== 'object' || objet === null || Array.isArray(objet)) {
      erreurs.push({
        champ: 'filtre',
        emplacement: 'requete',
        message: 'filtre[colonne][operateur]=valeur, ou un objet {colonne: {operateur: valeur}}.',
      });
    } else {
      for (const [nom, ops] of Object.entries(objet as Record<string, unknown>)) {
        if (typeof ops !== 'object' || ops === null || Array.isArray(ops)) {
          erreurs.push({
            champ: `filtre[${nom}]`,
            emplacement: 'requete',
            message: 'Un objet {operateur: valeur} attendu.',
          });
          continue;
        }
        for (const [op, valeur] of Object.entries(ops as Record<string, unknown>)) {
          filtres.push({ champ: `filtre[${nom}][${op}]`, colonne: nom, operateur: op, valeur });
        }
      }
    }
  }
  return { filtres, erreurs };
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const ENTIER = /^[+-]?\d{1,15}$/;
const HORODATAGE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** One value of a column's type, or the reason it is not one. */
function valeurDe(type: TypeColonne, brut: unknown): { ok: true; v: unknown } | { ok: false; message: string } {
  const texte = typeof brut === 'number' || typeof brut === 'boolean' ? String(brut) : brut;
  if (typeof texte !== 'string') return { ok: false, message: 'Une valeur texte ou nombre attendue.' };
  const v = texte.trim();
  switch (type) {
    case 'texte':
      return texte.length > 0 && texte.length <= 200
        ? { ok: true, v: texte }
        : { ok: false, message: 'Texte de 1 à 200 caractères.' };
    case 'entier':
      return ENTIER.test(v) ? { ok: true, v: Number(v) } : { ok: false, message: 'Entier attendu (ex. 12).' };
    case 'nombre': {
      const n = Number(v);
      return DECIMAL.test(v) && Number.isFinite(n)
        ? { ok: true, v: n }
        : { ok: false, message: 'Nombre en notation décimale attendu (ex. 12 ou -0.5).' };
    }
    case 'date':
      return jour.safeParse(v).success ? { ok: true, v } : { ok: false, message: 'Date AAAA-MM-JJ attendue.' };
    case 'horodatage':
      return HORODATAGE.test(v) && !Number.isNaN(Date.parse(v.replace(' ', 'T')))
        ? { ok: true, v }
        : { ok: false, message: 'Horodatage ISO 8601 attendu (AAAA-MM-JJ ou AAAA-MM-JJTHH:MM:SSZ).' };
    case 'booleen':
      return v === 'true' || v === 'false'
        ? { ok: true, v: v === 'true' }
        : { ok: false, message: 'true ou false attendu.' };
    case 'json':
      return { ok: false, message: 'Une colonne JSON ne se filtre que par nul.' };
  }
}

/** A list given as an array or as comma-separated text. */
const liste = (brut: unknown): unknown[] =>
  Array.isArray(brut) ? brut : typeof brut === 'string' ? brut.split(',') : [brut];

/**
 * The filters of an input, checked against the dataset: at most 12, each on a declared column with one of its
 * operators, each value of the column's type. Every fault is told field by field, all at once.
 */
export function lireFiltres(jeu: JeuDisponible, input: Record<string, unknown>): Filtre[] {
  const { filtres: bruts, erreurs } = filtresBruts(input);
  const refuser = (champ: string, message: string) => erreurs.push({ champ, emplacement: 'requete', message });
  if (bruts.length > FILTRES_MAX) {
    refuser('filtre', `${bruts.length} filtres : ${FILTRES_MAX} au plus, combinés par ET.`);
  }
  const filtres: Filtre[] = [];
  for (const f of bruts) {
    const c = colonne(jeu, f.colonne);
    if (!c) {
      refuser(f.champ, `Colonne inconnue du jeu ${jeu.nom} : ${f.colonne || '(vide)'} (voir /jeux/${jeu.nom}/schema).`);
      continue;
    }
    const permis = operateursDe(c);
    if (!(OPERATEURS as readonly string[]).includes(f.operateur) || !permis.includes(f.operateur as Operateur)) {
      refuser(
        f.champ,
        `Opérateur ${f.operateur || '(vide)'} non permis sur ${c.nom} : ${permis.join(', ') || 'aucun'}.`,
      );
      continue;
    }
    const operateur = f.operateur as Operateur;
    const brut = Array.isArray(f.valeur) && operateur !== 'in' && f.valeur.length === 1 ? f.valeur[0] : f.valeur;
    if (Array.isArray(brut) && operateur !== 'in' && operateur !== 'entre') {
      refuser(f.champ, 'Une seule valeur (paramètre répété).');
      continue;
    }
    if (operateur === 'nul') {
      const v = valeurDe('booleen', brut);
      if (!v.ok) refuser(f.champ, 'nul : true (vide) ou false (renseigné).');
      else filtres.push({ colonne: c, operateur, valeur: v.v });
      continue;
    }
    if (operateur === 'in' || operateur === 'entre') {
      const valeurs = liste(brut);
      if (operateur === 'in' && (valeurs.length < 1 || valeurs.length > 100)) {
        refuser(f.champ, 'in : 1 à 100 valeurs séparées par des virgules.');
        continue;
      }
      if (operateur === 'entre' && valeurs.length !== 2) {
        refuser(f.champ, 'entre : deux bornes séparées par une virgule (bornes comprises).');
        continue;
      }
      const lues = valeurs.map((x) => valeurDe(c.type, x));
      const faute = lues.find((x) => !x.ok);
      if (faute && !faute.ok) refuser(f.champ, faute.message);
      else filtres.push({ colonne: c, operateur, valeur: lues.map((x) => (x as { v: unknown }).v) });
      continue;
    }
    if (operateur === 'prefixe' && c.type !== 'texte') {
      refuser(f.champ, 'prefixe : sur une colonne texte seulement.');
      continue;
    }
    const v = valeurDe(c.type, brut);
    if (!v.ok) refuser(f.champ, v.message);
    else filtres.push({ colonne: c, operateur, valeur: v.v });
  }
  if (erreurs.length > 0) {
    throw new ApiError('parametres_invalides', `Filtres invalides : ${erreurs.map((x) => x.champ).join(', ')}.`, {
      erreurs,
    });
  }
  return filtres;
}

const CAST: Record<TypeColonne, string> = {
  texte: 'text',
  entier: 'bigint',
  nombre: 'float8',
  date: 'date',
  horodatage: 'timestamptz',
  booleen: 'boolean',
  json: 'json',
};

/** Parameters of a query, numbered as they are added. */
export class Parametres {
  readonly valeurs: unknown[] = [];
  ajouter(valeur: unknown, type: TypeColonne | 'float8[]' | null = null): string {
    this.valeurs.push(valeur);
    const n = `$${this.valeurs.length}`;
    return type === null ? n : `${n}::${type in CAST ? CAST[type as TypeColonne] : type}`;
  }
}

/** A filter as SQL over the registry's expression, its values as parameters. */
export function filtreSql(f: Filtre, p: Parametres): string {
  const x = f.colonne.sql;
  const cast = CAST[f.colonne.type];
  switch (f.operateur) {
    case 'eq':
      return `${x} = ${p.ajouter(f.valeur, f.colonne.type)}`;
    case 'in':
      return `${x} = ANY(${p.ajouter(f.valeur)}::${cast}[])`;
    case 'lt':
      return `${x} < ${p.ajouter(f.valeur, f.colonne.type)}`;
    case 'lte':
      return `${x} <= ${p.ajouter(f.valeur, f.colonne.type)}`;
    case 'gt':
      return `${x} > ${p.ajouter(f.valeur, f.colonne.type)}`;
    case 'gte':
      return `${x} >= ${p.ajouter(f.valeur, f.colonne.type)}`;
    case 'entre': {
      const [a, b] = f.valeur as [unknown, unknown];
      return `${x} BETWEEN ${p.ajouter(a, f.colonne.type)} AND ${p.ajouter(b, f.colonne.type)}`;
    }
    case 'prefixe':
      // LIKE with the pattern's own wildcards escaped: the value is a prefix, nothing more.
      return `${x} LIKE ${p.ajouter(`${String(f.valeur).replace(/[\\%_]/g, '\\$&')}%`, 'texte')}`;
    case 'nul':
      return f.valeur ? `${x} IS NULL` : `${x} IS NOT NULL`;
  }
}

/** A column's value as served: dates as AAAA-MM-JJ, times in ISO 8601 UTC, numbers as numbers. */
export function valeurServie(c: Colonne): string {
  switch (c.type) {
    case 'date':
      return `to_char(${c.sql}, 'YYYY-MM-DD')`;
    case 'horodatage':
      return `to_char((${c.sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
    case 'nombre':
      return `(${c.sql})::float8`;
    default:
      return c.sql;
  }
}

/** The SQL cast of a column's type, for a value read back from a cursor. */
export function castDe(type: TypeColonne): string {
  return CAST[type];
}

/**
 * How long a read may run in the database, and an aggregate: past it, PostgreSQL stops the statement, and the client
 * is told to narrow the filters (503, nothing debited). Below the operations' time-outs (8 s and 20 s), so that the
 * database's own refusal is the one the client reads. Tests lower them.
 */
export const DELAIS_BASE = { lectureMs: 6_000, agregatMs: 15_000 };

/** Runs a read under the statement time-out; a statement stopped by it is the 503 that says to narrow the filters. */
export async function sousDelai<T extends Record<string, unknown>>(
  db: Db,
  ms: number,
  sql: string,
  params: unknown[],
): Promise<T[]> {
  try {
    return await transaction(db, async (client) => (await client.query<T>(sql, params)).rows, {
      statement_timeout: Math.max(1, Math.floor(ms)),
      // No JIT: the planner counts 100 rows for each JSON array a dataset unnests (dvf), so it would compile every
      // read; measured on 134 000 DVF mutations, an aggregate took 8.6 s of compilation for 2.3 s of work.
      jit: 'off',
    });
  } catch (error) {
    if ((error as { code?: string }).code === '57014') {
      throw new ApiError(
        'service_indisponible',
        `Lecture trop large pour le délai de la base (${ms / 1000} s) : resserrez les filtres (une commune, une période, un identifiant). Rien n’est débité.`,
      );
    }
    throw error;
  }
}

/** Paris wall-clock minutes since midnight. */
// Made once: building a DateTimeFormat costs about half a millisecond, more than the rest of a read's checks.
const HEURE_PARIS = new Intl.DateTimeFormat('fr-FR', {
  timeZone: 'Europe/Paris',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
});

function minutesParis(date: Date): number {
  const parts = HEURE_PARIS.formatToParts(date);
  const get = (type: string) => Number(parts.find((x) => x.type === type)?.value ?? 0);
  return get('hour') * 60 + get('minute');
}

/** The specification's evening window of heavy reads: 20:30 to midnight, Paris time. */
const CRENEAU_SPEC = { debut: 20 * 60 + 30, fin: 24 * 60 };

/** The window of the configuration (`HH:MM-HH:MM`, or `aucun`), in minutes since midnight. */
export function creneauDe(texte: string): { debut: number; fin: number } | null {
  if (texte === 'aucun') return null;
  const [debut, fin] = texte.split('-').map((hm) => Number(hm.slice(0, 2)) * 60 + Number(hm.slice(3, 5)));
  return { debut, fin };
}

/** Whether `date` falls in the evening window of heavy reads (the specification's when not configured). */
export function dansCreneauLourd(date: Date, creneau: { debut: number; fin: number } | null = CRENEAU_SPEC): boolean {
  if (creneau === null) return false;
  const m = minutesParis(date);
  return m >= creneau.debut && m < creneau.fin;
}

import { z } from 'zod';
import { ApiError, type FieldError } from './errors.ts';

/**
 * The rules every input of the service obeys, whatever its field: its refusals are said in French, its texts are
 * ones PostgreSQL and JSON can hold, its numbers are ones arithmetic can use, and a number read from a query string
 * is written in decimal. Schemas say what a field means; what no field may ever carry is refused here, once.
 */

// The French messages of zod, for every schema of the process; a message a schema gives itself still wins. The most
// frequent refusals are said more plainly than the locale does.
z.config({
  ...z.locales.fr(),
  customError: (issue) => {
    if (issue.code !== 'invalid_type') return undefined;
    if (issue.input === undefined) return 'Champ requis.';
    if (issue.expected === 'number' && typeof issue.input === 'string') {
      return 'Nombre en notation décimale attendu (ex. 12 ou -0.5).';
    }
    if (issue.expected === 'number' && typeof issue.input === 'number') return 'Nombre fini attendu.';
    return undefined;
  },
});

/**
 * A calendar day, AAAA-MM-JJ, that exists (no 31 April) and that PostgreSQL's `date` can hold: from year 1, since
 * there is no year 0 in its calendar (JavaScript's has one).
 */
export const jour = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'Date AAAA-MM-JJ attendue.')
  .refine(
    (v) => {
      const d = new Date(`${v}T00:00:00Z`);
      return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(v) && !v.startsWith('0000');
    },
    { message: 'Date inexistante.' },
  );

/** A number of a query string: decimal notation only (no hexadecimal, no `Infinity`), an exponent allowed. */
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * A number given either as a JSON number (body, tool call) or as decimal text (query string): `schema` says its
 * range, and its `.optional()` or `.default()` (inside, so that an empty parameter such as `?limite=` is absent,
 * not 0, and so that the default is documented). Text that is not decimal, and any value that is not a number
 * (null, a boolean, a list), is refused rather than coerced.
 */
export function nombre<T extends z.ZodType<number | undefined>>(schema: T) {
  return z.preprocess((value) => {
    if (typeof value !== 'string') return value;
    const text = value.trim();
    if (text === '') return undefined;
    return DECIMAL.test(text) ? Number(text) : value;
  }, schema);
}

const NUL = /\0/;

/** Where a text is refused: a NUL character (PostgreSQL's text refuses it) or half a UTF-16 pair (no UTF-8 for it). */
function texteRefuse(text: string): string | null {
  if (NUL.test(text)) return 'Caractère NUL (U+0000) refusé.';
  if (!text.isWellFormed()) return 'Texte mal formé : moitié de paire UTF-16 isolée.';
  return null;
}

/** Subnormal numbers underflow in PostgreSQL's arithmetic (ll_to_earth, distances): 0 or at least this, in size. */
const PLUS_PETIT_NORMAL = 2 ** -1022;

function nombreRefuse(n: number): string | null {
  if (!Number.isFinite(n)) return 'Nombre fini attendu.';
  if (n !== 0 && Math.abs(n) < PLUS_PETIT_NORMAL)
    return 'Nombre trop proche de zéro (sous-normal) : 0, ou une valeur absolue d’au moins 2,2250738585072014e-308.';
  return null;
}

function simple(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The deepest an input may nest its objects and lists (the input itself is the first level). Every operation's input
 * is a few levels deep; a deeper one is refused before any schema reads it, so that no code that walks it, ours or a
 * library's, has to be written for a depth only an attacker sends (a body of 1 Mio can nest 500 000 lists).
 */
export const PROFONDEUR_MAX = 32;

/** What `refus` refuses: texts, numbers, and objects or lists nested deeper than `profondeur`. */
interface Regles {
  texte?: (t: string) => string | null;
  nombre?: (n: number) => string | null;
  profondeur?: number;
}

/** A place in an input, as a chain back to the input itself: its path is only built when something there is refused. */
interface Lieu {
  cle: PropertyKey;
  parent: Lieu | null;
}

function chemin(lieu: Lieu | null): PropertyKey[] {
  const path: PropertyKey[] = [];
  for (let l = lieu; l; l = l.parent) path.push(l.cle);
  return path.reverse();
}

/** An object or a list being walked: its keys (null for a list), the next to read, where it is, its level. */
interface Cadre {
  valeur: Record<string, unknown> | unknown[];
  cles: string[] | null;
  suivant: number;
  lieu: Lieu | null;
  niveau: number;
}

/**
 * Every place of `value` (texts, keys, numbers, at any depth) that `regles` refuses, as zod issues, in the order of
 * the document. A walk with a stack of its own, not a recursion: no input can exhaust the call stack here, whatever
 * its depth. Past `regles.profondeur`, the walk stops with that one refusal, on the input's field that holds the
 * excess (its full path could be as long as the body).
 */
function refus(value: unknown, regles: Regles): z.core.$ZodIssue[] {
  const issues: z.core.$ZodIssue[] = [];
  const pile: Cadre[] = [];
  const refuse = (lieu: Lieu | null, message: string, input: unknown) =>
    issues.push({ code: 'custom', path: chemin(lieu), message, input });
  /** Reads one value; false when it is nested too deep, which ends the walk. */
  const lire = (v: unknown, lieu: Lieu | null, niveau: number): boolean => {
    if (typeof v === 'string') {
      const message = regles.texte?.(v);
      if (message) refuse(lieu, message, v);
      return true;
    }
    if (typeof v === 'number') {
      const message = regles.nombre?.(v);
      if (message) refuse(lieu, message, v);
      return true;
    }
    const liste = Array.isArray(v);
    if (!liste && !simple(v)) return true;
    if (regles.profondeur !== undefined && niveau > regles.profondeur) return false;
    pile.push({ valeur: v, cles: liste ? null : Object.keys(v), suivant: 0, lieu, niveau });
    return true;
  };
  if (lire(value, null, 1)) {
    while (pile.length > 0) {
      const cadre = pile[pile.length - 1]!;
      const { valeur, cles } = cadre;
      const rang = cadre.suivant++;
      if (rang >= (cles ?? (valeur as unknown[])).length) {
        pile.pop();
        continue;
      }
      const cle = cles ? cles[rang]! : rang;
      const lieu: Lieu = { cle, parent: cadre.lieu };
      if (cles) {
        // A key is a text too; a refused key is the place's only refusal.
        const message = regles.texte?.(cle as string);
        if (message) {
          refuse(lieu, message, cle);
          continue;
        }
      }
      if (lire((valeur as Record<PropertyKey, unknown>)[cle], lieu, cadre.niveau + 1)) continue;
      const champ = chemin(lieu)[0]!;
      return [
        {
          code: 'custom',
          path: [champ],
          message: `Imbrication trop profonde : ${regles.profondeur} niveaux d’objets et de listes au plus.`,
          input: undefined,
        },
      ];
    }
  }
  return issues;
}

/**
 * Parses an input with `schema` under the rules above: nesting too deep and texts that PostgreSQL or JSON cannot hold
 * are refused before the schema reads them, numbers that cannot be computed with after it has (a number may come
 * from text). Every input passes here (HTTP, batches, MCP, the Hub's tool calls, the admin API): the one place of
 * these rules.
 */
export function lireEntree<S extends z.ZodType>(schema: S, raw: unknown): z.ZodSafeParseResult<z.output<S>> {
  const textes = refus(raw, { texte: texteRefuse, profondeur: PROFONDEUR_MAX });
  if (textes.length > 0) return { success: false, error: new z.ZodError(textes) as z.ZodError<z.output<S>> };
  const parsed = schema.safeParse(raw);
  if (!parsed.success) return parsed;
  const nombres = refus(parsed.data, { nombre: nombreRefuse });
  return nombres.length > 0 ? { success: false, error: new z.ZodError(nombres) as z.ZodError<z.output<S>> } : parsed;
}

/** A zod failure as the field-by-field detail of a 400, each field located by `locate`. */
export function fieldErrors(error: z.ZodError, locate: (field: string) => FieldError['emplacement']): FieldError[] {
  return error.issues.map((issue) => {
    const champ = issue.path
      .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
      .join('');
    return { champ: champ || '(corps)', emplacement: locate(String(issue.path[0] ?? '')), message: issue.message };
  });
}

/** The input `schema` reads from `raw` (lireEntree), or the 400 parametres_invalides that says what is wrong. */
export function exigerEntree<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  locate: (field: string) => FieldError['emplacement'],
): z.output<S> {
  const parsed = lireEntree(schema, raw);
  if (parsed.success) return parsed.data;
  const erreurs = fieldErrors(parsed.error, locate);
  throw new ApiError('parametres_invalides', `Paramètres invalides : ${erreurs.map((e) => e.champ).join(', ')}.`, {
    erreurs,
  });
}

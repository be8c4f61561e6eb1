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

/** Every place of `value` (texts, keys, numbers, at any depth) that `refuse` refuses, as zod issues. */
function refus(
  value: unknown,
  refuse: { texte?: (t: string) => string | null; nombre?: (n: number) => string | null },
  path: PropertyKey[] = [],
): z.core.$ZodIssue[] {
  const issue = (message: string, input: unknown): z.core.$ZodIssue[] => [{ code: 'custom', path, message, input }];
  if (typeof value === 'string') {
    const message = refuse.texte?.(value);
    return message ? issue(message, value) : [];
  }
  if (typeof value === 'number') {
    const message = refuse.nombre?.(value);
    return message ? issue(message, value) : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => refus(item, refuse, [...path, i]));
  if (!simple(value)) return [];
  return Object.entries(value).flatMap(([key, item]) => {
    const message = refuse.texte?.(key);
    if (message) return [{ code: 'custom', path: [...path, key], message, input: key } as z.core.$ZodIssue];
    return refus(item, refuse, [...path, key]);
  });
}

/**
 * Parses an input with `schema` under the rules above: texts that PostgreSQL or JSON cannot hold are refused before
 * the schema reads them, numbers that cannot be computed with after it has (a number may come from text).
 */
export function lireEntree<S extends z.ZodType>(schema: S, raw: unknown): z.ZodSafeParseResult<z.output<S>> {
  const textes = refus(raw, { texte: texteRefuse });
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

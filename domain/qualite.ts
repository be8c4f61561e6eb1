import { z } from 'zod';
import type { Queryable } from '../db/client.ts';
import type { OperationContext } from './catalogue.ts';
import { createMemory } from './platform/memoire.ts';
import type { Dataset } from './platform/sandbox.ts';

/**
 * The `qualite` block of the overview (value-quality), shared by every operation that serves one: one schema, so the
 * allowed flags and the shape cannot drift from one domain to another.
 */

/** Flags the overview allows, in its order. */
export const DRAPEAUX = [
  'prix_atypique',
  'surface_atypique',
  'vente_en_bloc',
  'doublon_probable',
  'date_estimee',
  'peu_d_observations',
  'valeur_imputee',
  'rattachement_incertain',
  'donnee_ancienne',
] as const;
export type Drapeau = (typeof DRAPEAUX)[number];

export const QualiteSchema = z
  .object({
    n: z.number().int().min(0).nullable().describe('Observations derrière la valeur.'),
    provenance: z.enum(['mesure', 'estime']).nullable(),
    incertitude: z
      .object({ demi_largeur_pct: z.number().nullable(), bas: z.number().nullable(), haut: z.number().nullable() })
      .nullable(),
    drapeaux: z.array(z.enum(DRAPEAUX)).describe('Vide quand rien n’appelle à la prudence.'),
    methode: z.string().nullable(),
    donnees_du: z.string().nullable().describe('AAAA-MM-JJ ou horodatage ISO 8601.'),
    source: z.string(),
  })
  .describe('Qualité de la valeur.');
export type Qualite = z.infer<typeof QualiteSchema>;

/** The flags in the overview's order, each once: blocks built from several rules compare equal when equal. */
export function drapeaux(flags: Iterable<Drapeau>): Drapeau[] {
  const set = new Set(flags);
  return DRAPEAUX.filter((d) => set.has(d));
}

/** Label of the live data when the embedded default filled it with the generated demonstration territory. */
export const SOURCE_DEMONSTRATION = 'démonstration (données fictives)';
/** The `parametres` row present while the live dataset holds the demonstration data. */
export const PARAMETRE_DEMONSTRATION = 'donnees_live_demonstration';

/**
 * How long the answer to "is the live data the demonstration?" is kept per database: one indexed read every few
 * seconds instead of one per call, made in the background while the answer in memory still holds, so no call waits
 * for it. The process that loads or clears the demonstration forgets it at once (forgetServedSource); another
 * process (an import run from the command line) is seen within this delay.
 */
const DEMONSTRATION_TTL_MS = 5_000;
const demonstration = new WeakMap<Queryable, ReturnType<typeof createMemory<string | null>>>();

async function demonstrationLabel(db: Queryable): Promise<string | null> {
  let memory = demonstration.get(db);
  if (!memory) {
    memory = createMemory<string | null>({ ttlMs: DEMONSTRATION_TTL_MS, refreshMs: DEMONSTRATION_TTL_MS / 2, max: 1 });
    demonstration.set(db, memory);
  }
  return memory.get('label', async () => {
    const { rows } = await db.query<{ valeur: string }>('SELECT valeur FROM parametres WHERE nom = $1', [
      PARAMETRE_DEMONSTRATION,
    ]);
    return rows[0]?.valeur ?? null;
  });
}

/**
 * Whether the live data is the demonstration, as servedSource knows it: the responses kept in memory are kept apart
 * by it (domain/invoke.ts), so that none of them outlives the demonstration's removal by more than a few
 * seconds.
 */
export async function liveIsDemonstration(db: Queryable): Promise<boolean> {
  return (await demonstrationLabel(db)) !== null;
}

/** Drops what servedSource knows of `db`'s live data: called by whatever writes the demonstration marker. */
export function forgetServedSource(db: Queryable): void {
  demonstration.delete(db);
}

/** A JSON object (not an array, a Date or a Buffer). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** `value` with the `source` of every `qualite` block in it, at any depth (top level, items, groups), set to `label`. */
function relabel<T>(value: T, label: string): T {
  if (Array.isArray(value)) return value.map((v: unknown) => relabel(v, label)) as T;
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const block = key === 'qualite' && isPlainObject(v) && typeof v.source === 'string';
    out[key] = block ? { ...relabel(v, label), source: label } : relabel(v, label);
  }
  return out as T;
}

/**
 * The result as served: while the live dataset holds the generated territory, every `qualite.source` in it says so,
 * so that nobody takes fictitious data for real. The sandbox is served as it is.
 */
export async function servedSource<T>(db: Queryable, dataset: Dataset, result: T): Promise<T> {
  if (dataset !== 'live') return result;
  const label = await demonstrationLabel(db);
  return label === null ? result : relabel(result, label);
}

/**
 * The handler of an operation that serves data of a dataset: it is given the caller's dataset, and its result goes
 * through servedSource. The one place a read operation is labelled, whatever the depth of its `qualite` blocks.
 */
export function servedFromDataset<I, O>(
  handler: (input: I, ctx: OperationContext, dataset: Dataset) => Promise<O>,
): (input: I, ctx: OperationContext) => Promise<O> {
  return async (input, ctx) => {
    const dataset: Dataset = ctx.caller.sandbox ? 'sandbox' : 'live';
    return servedSource(ctx.services.db, dataset, await handler(input, ctx, dataset));
  };
}

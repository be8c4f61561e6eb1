import { z } from 'zod';
import type { Queryable } from '../db/client.ts';

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
 * The result with the `source` of its `qualite` block as served: the demonstration label when the live dataset
 * holds the generated territory, so that nobody takes fictitious data for real.
 */
export async function servedSource<T extends { qualite: { source: string } }>(
  db: Queryable,
  dataset: 'live' | 'sandbox',
  result: T,
): Promise<T> {
  if (dataset !== 'live') return result;
  const { rows } = await db.query<{ valeur: string }>('SELECT valeur FROM parametres WHERE nom = $1', [
    PARAMETRE_DEMONSTRATION,
  ]);
  return rows[0] ? { ...result, qualite: { ...result.qualite, source: rows[0].valeur } } : result;
}

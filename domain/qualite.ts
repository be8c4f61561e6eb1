import { z } from 'zod';

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

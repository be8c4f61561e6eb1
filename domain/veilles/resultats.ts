import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { AnnonceListeSchema } from '../annonces/fiche.ts';

/** A result is served (read by cursor, delivered to webhooks) once it has been up this long: the spec's rule. */
export const DELAI_RESULTAT_S = 15 * 60;

export const NATURES = ['recherche', 'annonce', 'adresse'] as const;
export type Nature = (typeof NATURES)[number];
export const GENRE_RESULTAT: Record<Nature, 'veille.resultat' | 'alerte.resultat'> = {
  recherche: 'veille.resultat',
  annonce: 'alerte.resultat',
  adresse: 'alerte.resultat',
};

/** The event behind a result, from the listings' journal or from the journal of address novelties. */
const EvenementSchema = z.object({
  journal: z.enum(['annonces', 'adresses']).describe('annonces : GET /flux/annonces ; adresses : GET /flux/adresses.'),
  id: z.string().describe('Son identifiant dans ce flux.'),
  genre: z
    .string()
    .describe('nouvelle, baisse_prix… pour une annonce ; dpe, audit, permis, societe_civile, vente pour une adresse.'),
  le: z.string().describe('Quand il est arrivé (ISO 8601) : relevé du portail, ou entrée de la nouveauté au journal.'),
  avant: z.record(z.string(), z.unknown()).nullable().describe('Annonces : l’état avant (comme dans le flux).'),
  apres: z.record(z.string(), z.unknown()).nullable().describe('Annonces : l’état après (comme dans le flux).'),
  date_source: z.string().nullable().describe('Adresses : la date que donne la source (AAAA-MM-JJ).'),
  detail: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe('Adresses : le détail de la nouveauté (comme dans le flux).'),
  source: z.string().nullable().describe('Adresses : la source publique.'),
});

/** The format `resultats_veilles`: read at GET /veilles/resultats, and the `donnees` of its webhook deliveries. */
export const ResultatSchema = z.object({
  id: z.string().describe('Croissant dans l’ordre où les résultats sont apparus.'),
  genre: z.enum(['veille.resultat', 'alerte.resultat']),
  veille_id: z.uuid().describe('La veille ou l’alerte qui l’a produit.'),
  nature: z.enum(NATURES),
  le: z.string().describe('Quand l’événement est arrivé.'),
  apparu_le: z.string().describe('Quand le service l’a constaté.'),
  disponible_le: z.string().describe('apparu_le + 15 min : servi à partir de ce moment.'),
  evenement: EvenementSchema,
  annonce: AnnonceListeSchema.nullable().describe(
    'L’annonce au format liste, telle qu’elle était quand le résultat est apparu ; null pour une nouveauté d’adresse.',
  ),
  cle_ban: z.string().nullable().describe('L’adresse BAN en cause, quand elle est connue.'),
});
export type Resultat = z.infer<typeof ResultatSchema>;
export type Evenement = z.infer<typeof EvenementSchema>;

/**
 * The results of an organisation after id `apres` that are served already (`disponible_le` passed), in id order,
 * `limite` at most. Ids come up in the order of `disponible_le` (one fan-out at a time writes them), so what is not
 * served yet is always after what is.
 */
export async function lireResultats(
  db: Queryable,
  organisationId: string,
  options: { apres: number; limite: number; veilleId: string | null; maintenant: Date },
): Promise<{ resultats: Resultat[]; reste: boolean; prochain: string | null }> {
  const { rows } = await db.query<{ id: string; donnees: Omit<Resultat, 'id'> }>(
    // ORDER BY r.id, the number: `id` alone would name the text column of the select list ('10000' before '2000').
    `SELECT id::text, donnees FROM veilles_resultats r
      WHERE organisation_id = $1 AND id > $2 AND disponible_le <= $3 AND ($4::uuid IS NULL OR veille_id = $4)
      ORDER BY r.id LIMIT $5`,
    [organisationId, options.apres, options.maintenant, options.veilleId, options.limite + 1],
  );
  const reste = rows.length > options.limite;
  const resultats = rows.slice(0, options.limite).map((r) => ({ ...r.donnees, id: r.id }));
  // When the next one not served yet will be: the reader knows when to come back.
  const attente = reste
    ? null
    : await db.query<{ le: Date }>(
        `SELECT disponible_le AS le FROM veilles_resultats
          WHERE organisation_id = $1 AND id > $2 AND disponible_le > $3 AND ($4::uuid IS NULL OR veille_id = $4)
          ORDER BY id LIMIT 1`,
        [
          organisationId,
          resultats.at(-1) ? Number(resultats.at(-1)!.id) : options.apres,
          options.maintenant,
          options.veilleId,
        ],
      );
  return { resultats, reste, prochain: attente?.rows[0]?.le.toISOString() ?? null };
}

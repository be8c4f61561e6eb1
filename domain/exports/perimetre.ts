import { z } from 'zod';
import { transaction, type Db } from '../../db/client.ts';
import { JEUX_EXPORT } from './editions.ts';

/**
 * An organisation's export perimeter: the datasets its contract opens, set by the administrator
 * (`PUT /admin/v1/organisations/{id}/exports`). Setting it opens the datasets named and closes the others; a right is
 * closed, never deleted, so the rows of exports_droits are the dated record of every change.
 */

export const PerimetreExportSchema = z
  .object({
    jeux: z.array(z.enum(JEUX_EXPORT)).max(JEUX_EXPORT.length).describe('Les jeux ouverts ; [] ferme tout.'),
    motif: z.string().trim().min(1).max(200).optional().describe('Pourquoi (numéro de contrat, fin de contrat…).'),
  })
  .strict();

export interface PerimetreExport {
  organisation_id: string;
  jeux: string[];
  ouverts: string[];
  fermes: string[];
  historique: Array<{
    jeu: string;
    ouvert_le: string;
    ferme_le: string | null;
    motif_ouverture: string | null;
    motif_fermeture: string | null;
  }>;
}

async function historique(db: Pick<Db, 'query'>, organisationId: string) {
  const { rows } = await db.query<{
    jeu: string;
    ouvert_le: Date;
    ferme_le: Date | null;
    motif_ouverture: string | null;
    motif_fermeture: string | null;
  }>(
    `SELECT jeu, ouvert_le, ferme_le, motif_ouverture, motif_fermeture FROM exports_droits WHERE organisation_id = $1
      ORDER BY ouvert_le DESC, jeu LIMIT 500`,
    [organisationId],
  );
  return rows.map((r) => ({
    jeu: r.jeu,
    ouvert_le: r.ouvert_le.toISOString(),
    ferme_le: r.ferme_le?.toISOString() ?? null,
    motif_ouverture: r.motif_ouverture,
    motif_fermeture: r.motif_fermeture,
  }));
}

/** The perimeter as it stands, with its history. */
export async function lirePerimetreExport(db: Db, organisationId: string): Promise<PerimetreExport> {
  const rights = await historique(db, organisationId);
  return {
    organisation_id: organisationId,
    jeux: rights
      .filter((r) => r.ferme_le === null)
      .map((r) => r.jeu)
      .sort(),
    ouverts: [],
    fermes: [],
    historique: rights,
  };
}

/** Sets the perimeter to `jeux`: the datasets opened and closed by this change, and the perimeter after it. */
export async function definirPerimetreExport(
  db: Db,
  organisationId: string,
  demande: z.infer<typeof PerimetreExportSchema>,
): Promise<PerimetreExport> {
  const voulus = [...new Set(demande.jeux)].sort();
  const { ouverts, fermes } = await transaction(db, async (client) => {
    // One change at a time per organisation: two concurrent settings would otherwise both open the same dataset.
    await client.query('SELECT 1 FROM organisations WHERE id = $1 FOR UPDATE', [organisationId]);
    const fermes = (
      await client.query<{ jeu: string }>(
        `UPDATE exports_droits SET ferme_le = now(), motif_fermeture = $3
          WHERE organisation_id = $1 AND ferme_le IS NULL AND NOT (jeu = ANY($2::text[])) RETURNING jeu`,
        [organisationId, voulus, demande.motif ?? null],
      )
    ).rows.map((r) => r.jeu);
    const ouverts = (
      await client.query<{ jeu: string }>(
        `INSERT INTO exports_droits (organisation_id, jeu, motif_ouverture)
         SELECT $1, jeu, $3 FROM unnest($2::text[]) AS jeu
          WHERE NOT EXISTS (SELECT 1 FROM exports_droits d WHERE d.organisation_id = $1 AND d.jeu = jeu.jeu
                              AND d.ferme_le IS NULL)
         RETURNING jeu`,
        [organisationId, voulus, demande.motif ?? null],
      )
    ).rows.map((r) => r.jeu);
    return { ouverts: ouverts.sort(), fermes: fermes.sort() };
  });
  return { ...(await lirePerimetreExport(db, organisationId)), ouverts, fermes };
}

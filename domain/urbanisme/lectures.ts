import type { Queryable } from '../../db/client.ts';

/**
 * The readings cache of `lire_plu` (db/migrations/006_plu.sql) as the urbanism reads see it: whether the written rules
 * of a zone were read, when, and how many rules came out. A reading is kept per rules document content (its SHA-256),
 * zone code and reading version, so the state of a zone is found through the document its rules link names.
 */

/** Version of a reading: bumped when the prompt or the verification changes, so older cached readings are not used. */
export const LECTURE_VERSION = 1;

/**
 * - `lue`: the zone was read from this rules document (the version in force), `lue_le` and `regles` say when and how
 *   many rules were kept;
 * - `non_lue`: a rules document is published and the zone was never read (`lire_plu` reads it, about a minute);
 * - `scanne`: the published rules are a PDF without text: nothing can be read from it;
 * - `sans_reglement`: the Géoportail publishes no written rules for the zone.
 */
export type EtatLecture = 'lue' | 'non_lue' | 'scanne' | 'sans_reglement';

export interface LectureZone {
  etat: EtatLecture;
  lue_le: string | null;
  regles: number | null;
}

/** The rules document of a zone as the cache keys it: its link without the `#page=` fragment. */
export const documentDuLien = (reglementUrl: string | null): string | null => reglementUrl?.split('#')[0] || null;

/** The key of a zone in the map `etatsLecture` returns. */
export const cleLecture = (code: string, reglementUrl: string | null) => `${code}\u0000${reglementUrl ?? ''}`;

/** The reading state of each (zone code, rules link), keyed by `${code}\u0000${link}`: one read for them all. */
export async function etatsLecture(
  db: Queryable,
  zones: ReadonlyArray<{ code: string; reglement_url: string | null }>,
): Promise<Map<string, LectureZone>> {
  const etats = new Map<string, LectureZone>();
  const demandes = zones.filter((z) => documentDuLien(z.reglement_url) !== null);
  for (const z of zones)
    etats.set(cleLecture(z.code, z.reglement_url), { etat: 'sans_reglement', lue_le: null, regles: null });
  if (demandes.length === 0) return etats;
  const { rows } = await db.query<{
    zone: string;
    url: string;
    scanne: boolean | null;
    lue_le: string | null;
    regles: number | null;
  }>(
    `SELECT d.zone, d.url, p.scanne, to_char(l.extrait_le AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS lue_le,
            jsonb_array_length(l.contenu -> 'regles') AS regles
       FROM unnest($1::text[], $2::text[]) AS d (zone, url)
       LEFT JOIN reglements_pdf p ON p.url = d.url
       LEFT JOIN lectures_plu l ON l.document_sha256 = p.sha256 AND l.zone = d.zone AND l.version = $3`,
    [demandes.map((z) => z.code), demandes.map((z) => documentDuLien(z.reglement_url)), LECTURE_VERSION],
  );
  const parDocument = new Map(rows.map((r) => [cleLecture(r.zone, r.url), r]));
  for (const z of demandes) {
    const r = parDocument.get(cleLecture(z.code, documentDuLien(z.reglement_url)));
    etats.set(
      cleLecture(z.code, z.reglement_url),
      r?.lue_le
        ? { etat: 'lue', lue_le: r.lue_le, regles: r.regles }
        : { etat: r?.scanne ? 'scanne' : 'non_lue', lue_le: null, regles: null },
    );
  }
  return etats;
}

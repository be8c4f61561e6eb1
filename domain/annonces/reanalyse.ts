import type { Db } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { analyserAnnonces } from './analyse.ts';

/**
 * The listings analysed again after an import of what their analysis reads of their commune (contexteCommune in
 * analyse.ts, through the commune's indicators): the price scale and its 3-year change (`marche_prix`,
 * `marche_bassins`, the date of `dvf_millesimes`: the DVF importer), the rents (`loyers_communes`: the rent importer),
 * the share of F and G labels in the attractiveness score (`marche_dpe`: the DPE importer). The A/B/C zone and the
 * IRIS are not read by the analysis: their importers do not call this.
 *
 * Each of those importers calls this once its data is committed (and its derived tables rebuilt), with the communes it
 * changed when it knows them cheaply, else `'toutes'`. The active listings of those communes go through
 * analyserAnnonces, which writes a new analysis and its `reanalyse` event only where the fingerprint of the inputs
 * changed: a re-import of the same file, or of one that changes nothing a listing reads, writes no event.
 *
 * Arrows point down: importers call this, nothing here knows them.
 */

/** Listings read per page, in commune order so that a batch of analyserAnnonces reads few communes. */
const PAGE = 1000;

export interface Reanalyse {
  /** Active listings of the communes concerned, whose fingerprint was computed again. */
  examinees: number;
  /** Those whose inputs changed: analysed again, each with its event. */
  analysees: number;
  evenements: number;
}

/**
 * Analyses again, where their inputs changed, the active listings of `communes` (INSEE codes, as the listings are
 * filed: a municipal arrondissement by its own code), or of every commune.
 */
export async function reanalyserCommunes(
  db: Db,
  dataset: Dataset,
  communes: Iterable<string> | 'toutes',
): Promise<Reanalyse> {
  const total: Reanalyse = { examinees: 0, analysees: 0, evenements: 0 };
  const liste = communes === 'toutes' ? null : [...new Set(communes)];
  if (liste?.length === 0) return total;
  // A listing without a commune has a context no import changes.
  let apres = null as { insee: string; id: string } | null;
  for (;;) {
    const { rows } = await db.query<{ insee: string; id: string }>(
      `SELECT insee, id FROM annonces
        WHERE dataset = $1 AND statut = 'actif' AND insee IS NOT NULL
          AND ($2::text[] IS NULL OR insee = ANY($2::text[]))
          AND ($3::text IS NULL OR (insee, id) > ($3::text, $4::text))
        ORDER BY insee, id LIMIT ${PAGE}`,
      [dataset, liste, apres?.insee ?? null, apres?.id ?? null],
    );
    if (rows.length === 0) break;
    const fait = await analyserAnnonces(
      db,
      dataset,
      rows.map((r) => r.id),
    );
    total.examinees += rows.length;
    total.analysees += fait.analysees;
    total.evenements += fait.evenements;
    if (rows.length < PAGE) break;
    apres = rows.at(-1)!;
  }
  return total;
}

/** The line of an importer's report that says it. */
export function ligneReanalyse(r: Reanalyse): string {
  return `annonces réanalysées : ${r.analysees} (sur ${r.examinees} annonces actives des communes concernées)`;
}

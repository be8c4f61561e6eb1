import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';

/**
 * The journal of listing events (DESIGN.md section 15): one append-only table, `annonces_evenements`, written in the
 * transaction of the import that causes the events, read by a cursor on its id. The feed (`flux_annonces`) reads it
 * here; so will whatever else follows listings (webhook fan-out, watches and alerts): each keeps the last id it read,
 * and `lireEvenements` gives what came after.
 *
 * Why a lock: ids come from a sequence, and a sequence hands out values in the order they are asked, not in the order
 * their transactions commit. Were two imports to write at once, the one holding the smaller ids could commit after a
 * reader had already read past the bigger ones, and that reader would never see them. So every writer takes the
 * journal's transaction-level advisory lock before it takes an id (`ecrireEvenements` does both): the next writer
 * takes ids only after the previous one has committed, and the ids a reader sees committed are always every id below
 * the highest it sees (a rolled-back writer leaves a gap, never a late arrival).
 */

export const GENRES = [
  'nouvelle',
  'analyse',
  'reanalyse',
  'baisse_prix',
  'hausse_prix',
  'retrait',
  'reactivation',
  'multi_agences',
] as const;
export type Genre = (typeof GENRES)[number];

/** The state of a listing before or after an event: each field is given for the genres it concerns, else null. */
export interface EtatEvenement {
  prix: number | null;
  ecart_pct: number | null;
  detecte_le: string | null;
  actif: boolean | null;
  analyse_le: string | null;
  score: number | null;
  nb_agences: number | null;
  nb_portails: number | null;
  prix_min: number | null;
  prix_max: number | null;
}

export const CHAMPS_ETAT: ReadonlyArray<keyof EtatEvenement> = [
  'prix',
  'ecart_pct',
  'detecte_le',
  'actif',
  'analyse_le',
  'score',
  'nb_agences',
  'nb_portails',
  'prix_min',
  'prix_max',
];

/** Every field of the state, null where `etat` says nothing. */
export function etatComplet(etat: Partial<EtatEvenement> | null): EtatEvenement | null {
  if (etat === null) return null;
  return Object.fromEntries(CHAMPS_ETAT.map((k) => [k, etat[k] ?? null])) as unknown as EtatEvenement;
}

export interface NouvelEvenement {
  genre: Genre;
  /** ISO 8601: when it happened (the snapshot's time; the analysis's for analyse and reanalyse). */
  le: string;
  annonceId: string;
  insee: string | null;
  codePostal: string | null;
  departement: string | null;
  avant: Partial<EtatEvenement> | null;
  apres: Partial<EtatEvenement> | null;
}

/** The lock of the journal's writers: one per dataset (the two datasets' readers never read each other's events). */
const VERROU_JOURNAL = 726_354_029;

/**
 * Takes the journal's lock for the rest of the caller's transaction. A writer that reads the state its events depend
 * on (the importer) takes it before reading, so that two writers never work from the same state.
 */
export async function verrouillerJournal(client: Queryable, dataset: Dataset): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU_JOURNAL, dataset]);
}

/**
 * Appends events to the journal in the order given (their ids increase in that order), inside the caller's
 * transaction, which holds the journal's lock from here to its end. Returns the ids.
 */
export async function ecrireEvenements(
  client: Queryable,
  dataset: Dataset,
  evenements: NouvelEvenement[],
): Promise<number[]> {
  if (evenements.length === 0) return [];
  await verrouillerJournal(client, dataset);
  const { rows } = await client.query<{ id: number }>(
    `SELECT nextval('annonces_evenements_id') AS id FROM generate_series(1, $1::int)`,
    [evenements.length],
  );
  const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
  await client.query(
    `INSERT INTO annonces_evenements (id, dataset, genre, le, annonce_id, insee, code_postal, departement, avant, apres)
     SELECT r.id, $1, r.genre, r.le, r.annonce_id, r.insee, r.code_postal, r.departement, r.avant, r.apres
       FROM jsonb_to_recordset($2::jsonb) AS r(id bigint, genre text, le timestamptz, annonce_id text, insee text,
            code_postal text, departement text, avant jsonb, apres jsonb)`,
    [
      dataset,
      JSON.stringify(
        evenements.map((e, i) => ({
          id: ids[i],
          genre: e.genre,
          le: e.le,
          annonce_id: e.annonceId,
          insee: e.insee,
          code_postal: e.codePostal,
          departement: e.departement,
          avant: etatComplet(e.avant),
          apres: etatComplet(e.apres),
        })),
      ),
    ],
  );
  return ids;
}

/** Filters of a reader, combined with AND; a list matches any of its values. */
export interface FiltresEvenements {
  genres?: readonly Genre[];
  insee?: readonly string[];
  codesPostaux?: readonly string[];
  departements?: readonly string[];
  /** ISO 8601: events that happened from then on (`le`). */
  depuis?: string;
}

export interface EvenementLu {
  id: number;
  genre: Genre;
  le: string;
  annonce_id: string;
  avant: EtatEvenement | null;
  apres: EtatEvenement | null;
}

export interface PageEvenements {
  evenements: EvenementLu[];
  /** More events matching the filters were there when the page was read. */
  reste: boolean;
  /**
   * Where a reader can resume without missing anything: the last event of a full page, else the highest id of the
   * dataset's journal seen by the same read (past events the filters left out).
   */
  reprise: number;
}

/**
 * The events after `apresId` that pass the filters, in id order, `limite` at most: one statement, so the page and
 * the highest id it reports are read at the same instant.
 */
export async function lireEvenements(
  db: Queryable,
  dataset: Dataset,
  apresId: number,
  filtres: FiltresEvenements,
  limite: number,
): Promise<PageEvenements> {
  const params: unknown[] = [dataset, apresId];
  const conditions: string[] = [];
  const liste = (colonne: string, valeurs: readonly string[] | undefined) => {
    if (!valeurs || valeurs.length === 0) return;
    params.push(valeurs);
    conditions.push(`${colonne} = ANY($${params.length}::text[])`);
  };
  liste('genre', filtres.genres);
  liste('insee', filtres.insee);
  liste('code_postal', filtres.codesPostaux);
  liste('departement', filtres.departements);
  if (filtres.depuis) {
    params.push(filtres.depuis);
    conditions.push(`le >= $${params.length}::timestamptz`);
  }
  params.push(limite + 1);
  const { rows } = await db.query<{
    dernier: number | null;
    id: number | null;
    genre: Genre;
    le: string;
    annonce_id: string;
    avant: EtatEvenement | null;
    apres: EtatEvenement | null;
  }>(
    // `le` written as toISOString writes it (milliseconds, UTC): a thousand dates parsed and written again cost the
    // api more than the rest of the event.
    `WITH page AS (
       SELECT id, genre, to_char(le AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS le, annonce_id, avant, apres
         FROM annonces_evenements
        WHERE dataset = $1 AND id > $2 ${conditions.map((c) => `AND ${c}`).join(' ')}
        ORDER BY id LIMIT $${params.length})
     SELECT d.dernier, p.* FROM (SELECT max(id) AS dernier FROM annonces_evenements WHERE dataset = $1) d
       LEFT JOIN page p ON true
      ORDER BY p.id`,
    params,
  );
  const lus = rows.filter((r) => r.id !== null);
  const reste = lus.length > limite;
  const evenements = lus.slice(0, limite).map((r) => ({
    id: Number(r.id),
    genre: r.genre,
    le: r.le,
    annonce_id: r.annonce_id,
    avant: r.avant,
    apres: r.apres,
  }));
  const dernier = Number(rows[0]?.dernier ?? 0);
  return {
    evenements,
    reste,
    reprise: reste ? evenements.at(-1)!.id : Math.max(apresId, dernier, evenements.at(-1)?.id ?? 0),
  };
}

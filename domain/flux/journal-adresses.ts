import type { PoolClient } from 'pg';
import type { Db, Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';

/**
 * The journal of address novelties (db/migrations/030_flux_adresses.sql): what the importers found new at a BAN
 * address, appended in the transaction that writes it (DVF, whose writer commits batches it does not share: in one
 * more at the end of its import, owed until then and taken over by the next import if it dies, see journaliserVentes
 * and domain/dvf/import.ts), read by GET /flux/adresses (domain/flux/adresses.ts).
 *
 * A novelty is a row new to the database, never a row changed: a re-import of the same file, or of a file that
 * corrects a row, adds nothing. Each importer knows which of its rows are new (their keys, compared before it writes
 * them, or its upsert's own account of what it inserted) and hands them here; the novelty is then read from the row
 * as written, by the SQL of its genre below: one place says what each genre serves. One novelty per source row
 * (`reference`), whatever the re-imports: the journal's unique key holds it even against two imports of one file.
 *
 * Only rows tied to a BAN key enter: the feed is about addresses (a DPE the observatory could not geocode, a sale
 * DVF does not place at a number, a permit whose land address is not found in the BAN are not address novelties).
 *
 * Order. Ids come from a sequence; a writer takes the journal's transaction-level advisory lock (per dataset) before
 * it draws them and keeps it until it commits. So ids become visible in their order: a reader that has seen id N
 * will never see a smaller one appear later (which a concurrent writer holding a smaller id and committing after a
 * bigger one would otherwise do, and a reader past it would skip for good). The lock is taken as late as possible,
 * by the append itself, which each importer makes the last statement of its transaction: writers wait for each other
 * only for the time of an append and a commit.
 */

// One lock per dataset (second key: hashtext of the dataset), as the other imports of this service do.
const VERROU_JOURNAL = 726_354_030;

/** The genres of the feed, in the order the description lists them. */
export const GENRES = ['dpe', 'audit', 'permis', 'societe_civile', 'vente'] as const;
export type Genre = (typeof GENRES)[number];

interface Definition {
  /** The public source, as each novelty names it. */
  source: string;
  /** The genre's table, read as `t`. */
  table: string;
  /** That the row `t` is the row of reference `r`: for keys compared before they are written. */
  estReference: string;
  /** That the row `t` is one of the references of the array $2. */
  parReferences: string;
  /**
   * The novelties of the rows of `t` where `filtre` holds ($1 is the dataset): columns reference, cle_ban, insee,
   * code_postal, date_source, detail. insee and code_postal are the address's when the BAN has it (see ajouter).
   */
  selection: (filtre: string) => string;
}

const jour = (colonne: string) => `to_char(${colonne}, 'YYYY-MM-DD')`;

const GENRE: Record<Genre, Definition> = {
  // A DPE new to the database: etiquette and GES of the dwelling, the DPE it replaces if any.
  dpe: {
    source: 'Observatoire DPE (ADEME)',
    table: 'dpe',
    estReference: 't.numero_dpe = r',
    parReferences: 't.numero_dpe = ANY($2::text[])',
    selection: (filtre) => `
      SELECT t.numero_dpe AS reference, t.cle_ban, t.insee, t.code_postal, t.etabli_le AS date_source,
             jsonb_build_object('numero_dpe', t.numero_dpe, 'etiquette', t.etiquette, 'ges', t.ges,
                                'type_batiment', t.type_batiment, 'surface_m2', t.surface_m2,
                                'remplace', t.numero_dpe_remplace) AS detail
        FROM dpe t WHERE ${filtre}`,
  },
  // An audit new to the database, at its own BAN key or else at its audited DPE's (an audit whose DPE comes later
  // becomes a novelty when the two are linked: domain/dpe/import.ts).
  audit: {
    source: 'Audits énergétiques (ADEME)',
    table: 'dpe_audits',
    estReference: 't.numero_audit = r',
    parReferences: 't.numero_audit = ANY($2::text[])',
    selection: (filtre) => `
      SELECT t.numero_audit AS reference, coalesce(t.cle_ban, d.cle_ban) AS cle_ban, d.insee, d.code_postal,
             t.etabli_le AS date_source,
             jsonb_build_object('numero_audit', t.numero_audit, 'numero_dpe', t.numero_dpe,
                                'classe_initiale', t.classe_initiale, 'classe_visee', t.classe_visee,
                                'cout_travaux_max', t.cout_travaux_max) AS detail
        FROM dpe_audits t LEFT JOIN dpe d ON d.dataset = t.dataset AND d.numero_dpe = t.numero_dpe
       WHERE ${filtre}`,
  },
  // An authorisation new to the database (a mixed project, in both Sitadel's housing and premises files, is one
  // novelty), dated by its authorisation, else its filing. The applicant only when a legal person.
  permis: {
    source: 'Sitadel (SDES)',
    table: 'permis',
    estReference: `(t.type, t.numero) = (split_part(r, ' ', 1), split_part(r, ' ', 2))`,
    parReferences: `(t.type, t.numero) IN (SELECT split_part(r, ' ', 1), split_part(r, ' ', 2) FROM unnest($2::text[]) r)`,
    selection: (filtre) => `
      SELECT DISTINCT ON (t.type, t.numero)
             t.type || ' ' || t.numero AS reference, t.cle_ban, t.insee, t.terrain_code_postal AS code_postal,
             coalesce(t.autorise_le, t.depot_le) AS date_source,
             jsonb_build_object('type', t.type, 'numero', t.numero, 'etat', t.etat,
                                'autorise_le', ${jour('t.autorise_le')}, 'depose_le', ${jour('t.depot_le')},
                                'logements_crees', t.logements_total,
                                'surface_habitation_creee_m2', t.surface_habitation_creee,
                                'surface_locaux_crees_m2', t.surface_locaux_crees,
                                'demandeur', CASE WHEN t.demandeur_personne_physique
                                                    OR (t.demandeur_denomination IS NULL AND t.demandeur_siren IS NULL)
                                                  THEN NULL
                                                  ELSE jsonb_build_object('denomination', t.demandeur_denomination,
                                                                          'siren', t.demandeur_siren) END) AS detail
        FROM permis t WHERE ${filtre} AND t.cle_ban IS NOT NULL
       ORDER BY t.type, t.numero, t.source`,
  },
  // A BODACC notice new to the database about a civil company whose seat is the address: a legal person, never a
  // natural one (those notices keep no name anyway). Civil as societes_civiles reads it: SIRENE's legal category when
  // it knows one of the notice's SIRENs, else the notice's own words (domain/entreprises/societes-civiles.ts).
  societe_civile: {
    source: 'BODACC (DILA)',
    table: 'avis_bodacc',
    estReference: 't.id = r',
    parReferences: 't.id = ANY($2::text[])',
    selection: (filtre) => `
      SELECT t.id AS reference, t.cle_ban, NULL::text AS insee, coalesce(t.siege_code_postal, t.cp) AS code_postal,
             t.date_parution AS date_source,
             jsonb_build_object('avis', t.id, 'denomination', t.denomination, 'siren', t.sirens[1],
                                'forme', t.forme_juridique, 'famille', t.categorie,
                                'type', CASE WHEN lower(t.type_avis) LIKE 'rectif%' THEN 'rectificatif'
                                             WHEN lower(t.type_avis) LIKE 'annul%' THEN 'annulation'
                                             ELSE 'initial' END,
                                'resume', t.resume) AS detail
        FROM avis_bodacc t
       WHERE ${filtre} AND NOT t.porte_sur_personne_physique
         AND coalesce((SELECT bool_or(u.societe_civile) FROM unites_legales u
                        WHERE u.dataset = t.dataset AND u.siren = ANY(t.sirens)), t.societe_civile)`,
  },
  // A sale new to the database. Its columns compare byte by byte (COLLATE "C", db/migrations/013): given in the
  // database's collation, so that the address's columns can be compared with them.
  vente: {
    source: 'DVF (DGFiP, Etalab)',
    table: 'dvf_mutations',
    estReference: 't.id_mutation = r',
    parReferences: 't.id_mutation = ANY($2::text[])',
    selection: (filtre) => `
      SELECT t.id_mutation COLLATE "default" AS reference, t.cle_ban COLLATE "default" AS cle_ban,
             t.insee COLLATE "default" AS insee, t.code_postal COLLATE "default" AS code_postal,
             t.date_mutation AS date_source,
             jsonb_build_object('id_mutation', t.id_mutation, 'nature', t.nature, 'prix', t.valeur_fonciere,
                                'types', to_jsonb(t.types_locaux), 'logements', t.logements,
                                'surface_logements_m2', t.surface_logements, 'prix_m2', t.prix_m2) AS detail
        FROM dvf_mutations t WHERE ${filtre}`,
  },
};

/** The public source of a genre, as its novelties name it. */
export const sourceDe = (genre: Genre): string => GENRE[genre].source;

/**
 * The novelties of `genre` whose rows `filtre` selects (over `t`, the genre's table; $1 is the dataset, `params`
 * follow), appended under the journal's lock, in the order of their dates. Must run inside the writer's transaction,
 * as its last statement: the lock is held until that transaction ends. Returns how many entered.
 */
async function ajouter(
  client: PoolClient,
  genre: Genre,
  dataset: Dataset,
  filtre: string,
  params: unknown[],
): Promise<number> {
  await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU_JOURNAL, dataset]);
  const { rowCount } = await client.query(
    `INSERT INTO journal_adresses (dataset, genre, reference, cle_ban, insee, code_postal, date_source, detail, source)
     SELECT $1, '${genre}', n.reference, n.cle_ban,
            coalesce(a.insee, n.insee, upper(split_part(n.cle_ban, '_', 1))), coalesce(a.code_postal, n.code_postal),
            n.date_source, n.detail, $${params.length + 2}
       FROM (${GENRE[genre].selection(`t.dataset = $1 AND ${filtre}`)}) n
       LEFT JOIN adresses a ON a.dataset = $1 AND a.cle_ban = n.cle_ban
      WHERE n.cle_ban IS NOT NULL AND n.date_source IS NOT NULL
      ORDER BY n.date_source, n.reference
     ON CONFLICT (dataset, genre, reference) DO NOTHING`,
    [dataset, ...params, GENRE[genre].source],
  );
  return rowCount ?? 0;
}

/**
 * Appends the novelties of the rows of `genre` with these references (rows new to the database, written by the
 * calling transaction). See `ajouter`: the last statement of the writer's transaction.
 */
export async function journaliser(
  client: PoolClient,
  genre: Genre,
  dataset: Dataset,
  references: string[],
): Promise<number> {
  if (references.length === 0) return 0;
  return ajouter(client, genre, dataset, GENRE[genre].parReferences, [references]);
}

/**
 * Those of `references` (keys of `genre`'s rows about to be written) that the database does not have yet: the novelties
 * of a write, compared in its transaction before it writes. The reference of a permit is its type and number
 * (`PC 0332342200012`).
 */
export async function nouvellesReferences(
  db: Queryable,
  genre: Genre,
  dataset: Dataset,
  references: string[],
): Promise<string[]> {
  if (references.length === 0) return [];
  const { table, estReference } = GENRE[genre];
  const { rows } = await db.query<{ r: string }>(
    `SELECT r FROM unnest($2::text[]) AS r
      WHERE NOT EXISTS (SELECT 1 FROM ${table} t WHERE t.dataset = $1 AND ${estReference})`,
    [dataset, references],
  );
  return rows.map((row) => row.r);
}

/**
 * Each batch of an importer that writes through upsertParLots (domain/import/ecriture.ts) in a transaction of its own,
 * on `client`, with its novelties: upsertParLots completes a batch (`completer`) on the connection it writes with,
 * just before it writes it. `avant(references)`, first thing in `completer`, commits the batch before with its
 * novelties and begins this one's transaction, finding which of its references are new; `terminer()`, once the last
 * batch is written, commits it; `abandonner()` rolls back what is open. An import so never holds a transaction longer
 * than a batch, and the journal's lock only for an append.
 */
export function lotsJournalises(client: PoolClient, genre: Genre, dataset: Dataset) {
  let ouverte = false;
  let nouvelles: string[] = [];
  let journalisees = 0;
  const terminer = async () => {
    if (!ouverte) return;
    journalisees += await journaliser(client, genre, dataset, nouvelles);
    await client.query('COMMIT');
    ouverte = false;
  };
  return {
    /** Novelties appended by the batches committed. */
    get nouveautes(): number {
      return journalisees;
    },
    async avant(references: string[]): Promise<void> {
      await terminer();
      await client.query('BEGIN');
      ouverte = true;
      nouvelles = await nouvellesReferences(client, genre, dataset, references);
    },
    terminer,
    async abandonner(): Promise<void> {
      if (ouverte) await client.query('ROLLBACK').catch(() => {});
      ouverte = false;
    },
  };
}

/**
 * Runs an importer's writes on a connection of their own, each batch a transaction with its novelties
 * (lotsJournalises): the last batch committed at the end, what is open rolled back on a failure, the connection given
 * back either way.
 */
export async function avecLotsJournalises<T>(
  db: Db,
  genre: Genre,
  dataset: Dataset,
  travail: (client: PoolClient, journal: ReturnType<typeof lotsJournalises>) => Promise<T>,
): Promise<{ resultat: T; nouveautes: number }> {
  const client = await db.connect();
  const journal = lotsJournalises(client, genre, dataset);
  try {
    const resultat = await travail(client, journal);
    await journal.terminer();
    return { resultat, nouveautes: journal.nouveautes };
  } catch (error) {
    await journal.abandonner();
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Appends the sales that entered the database since `depuis` (a timestamp compared with their `cree_le`) and are
 * attached to the BAN: those of one DVF import, in the communes and vintages it read; or, with `insees` and
 * `millesimes` null, those of every commune and vintage (an import that takes over from one that died before
 * journaling: domain/dvf/import.ts). See `ajouter`: in a transaction of its own, as its last statement (the DVF
 * importer writes its batches in transactions it does not share).
 */
export async function journaliserVentes(
  client: PoolClient,
  dataset: Dataset,
  lecture: { insees: string[] | null; millesimes: number[] | null; depuis: string },
): Promise<number> {
  if (lecture.insees === null || lecture.millesimes === null) {
    return ajouter(client, 'vente', dataset, 't.cree_le >= $2::timestamptz AND t.cle_ban IS NOT NULL', [
      lecture.depuis,
    ]);
  }
  if (lecture.insees.length === 0 || lecture.millesimes.length === 0) return 0;
  return ajouter(
    client,
    'vente',
    dataset,
    't.millesime = ANY($2::smallint[]) AND t.insee = ANY($3::text[]) AND t.cree_le >= $4::timestamptz AND t.cle_ban IS NOT NULL',
    [lecture.millesimes, lecture.insees, lecture.depuis],
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------------------------------

export interface EvenementLu {
  id: number;
  genre: Genre;
  cle_ban: string;
  insee: string;
  code_postal: string | null;
  date_source: string;
  entree_le: Date;
  detail: Record<string, unknown>;
  source: string;
}

export interface FiltresJournal {
  genres: Genre[];
  insee: string[];
  cp: string[];
  /**
   * The earliest time of entry in the journal: a day (AAAA-MM-JJ, from midnight in Paris) or an ISO 8601 time (in
   * Paris without an offset).
   */
  depuis: string | null;
}

/** The SQL instant of `depuis` given as `param`. */
function instant(param: string, depuis: string): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(depuis)) return `(${param}::date::timestamp AT TIME ZONE 'Europe/Paris')`;
  if (/(?:Z|[+-]\d{2}:?\d{2})$/i.test(depuis)) return `${param}::timestamptz`;
  return `(${param}::timestamp AT TIME ZONE 'Europe/Paris')`;
}

/**
 * The events after id `apres` that pass the filters (all of them, AND), `limite` at most in id order, and the last
 * id of the dataset's journal, read in the same statement (one snapshot): past a page that is not full, a reader may
 * move its cursor there, since no smaller id can still appear (see the top of this file).
 */
export async function lireJournal(
  db: Queryable,
  dataset: Dataset,
  apres: number,
  filtres: FiltresJournal,
  limite: number,
): Promise<{ evenements: EvenementLu[]; dernier: number | null }> {
  const params: unknown[] = [dataset, apres];
  const where = ['j.dataset = $1', 'j.id > $2'];
  const filtre = (colonne: string, valeurs: unknown[], type: string) => {
    if (valeurs.length === 0) return;
    params.push(valeurs);
    where.push(`j.${colonne} = ANY($${params.length}::${type}[])`);
  };
  filtre('genre', filtres.genres, 'text');
  filtre('insee', filtres.insee, 'text');
  filtre('code_postal', filtres.cp, 'text');
  if (filtres.depuis) {
    params.push(filtres.depuis);
    where.push(`j.entree_le >= ${instant(`$${params.length}`, filtres.depuis)}`);
  }
  params.push(limite);
  const { rows } = await db.query<EvenementLu & { dernier: number | null }>(
    `SELECT m.dernier, p.*
       FROM (SELECT max(id) AS dernier FROM journal_adresses WHERE dataset = $1) m
       LEFT JOIN LATERAL (
         SELECT j.id, j.genre, j.cle_ban, j.insee, j.code_postal, ${jour('j.date_source')} AS date_source, j.entree_le,
                j.detail, j.source
           FROM journal_adresses j WHERE ${where.join(' AND ')}
          ORDER BY j.id LIMIT $${params.length}) p ON true
      ORDER BY p.id`,
    params,
  );
  return {
    dernier: rows[0]?.dernier ?? null,
    evenements: rows.filter((r) => r.id !== null).map(({ dernier: _dernier, ...evenement }) => evenement),
  };
}

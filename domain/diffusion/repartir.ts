import type { PoolClient } from 'pg';
import { transaction, type Db } from '../../db/client.ts';
import { evenementServi, enListe, lireAnnoncesEnListe, type LigneListe } from '../annonces/fiche.ts';
import type { EtatEvenement, Genre as GenreAnnonce } from '../annonces/journal.ts';
import { passeCriteres, type Criteres } from '../veilles/criteres.ts';
import { DELAI_RESULTAT_S, GENRE_RESULTAT, type Evenement, type Nature, type Resultat } from '../veilles/resultats.ts';
import { LISTING_GENRES, passeFiltres, TYPE_FILTRE, type LieuAnnonce } from '../webhooks/operations.ts';

/**
 * The fan-out of the live journals to the organisations (DESIGN: events). One call takes the next `limite` events of
 * each journal after its cursor and writes, in the transaction that moves the cursors:
 * - a delivery of each listing event to every active subscription of its genre whose filters it passes, created before
 *   the event was written (`evenement_depart`), its body written once (`diffusion_charges`);
 * - the results of the watches (a listing served, online, that newly passes the criteria) and alerts (an event of the
 *   listing followed; at the address followed, a novelty or a listing's arrival, drop, withdrawal or return);
 * - a delivery of each result to the subscriptions of its organisation to `veille.resultat` / `alerte.resultat`, due
 *   when the result is served (15 minutes after it came up).
 * One instance at a time: the cursors are taken with SKIP LOCKED, and an instance that finds them taken does nothing.
 */

/** Credits of one delivered event or result (the rate `evenement` of the specification). */
export const CREDITS_PAR_EVENEMENT = 1;
/** The listing events an alert on that listing reports. */
const ALERTE_ANNONCE: readonly GenreAnnonce[] = [
  'baisse_prix',
  'hausse_prix',
  'retrait',
  'reactivation',
  'multi_agences',
];
/** The listing events an alert on an address reports, for the listings at that address. */
const ALERTE_ADRESSE: readonly GenreAnnonce[] = ['nouvelle', 'baisse_prix', 'retrait', 'reactivation'];

export interface Repartition {
  evenements: number;
  nouveautes: number;
  livraisons: number;
  resultats: number;
  /** The subscriptions that have new deliveries: their queue is to be woken. */
  abonnements: string[];
  /** A journal had more than `limite` new events: call again. */
  reste: boolean;
}

interface EvenementAnnonce {
  id: string;
  genre: GenreAnnonce;
  le: Date;
  annonce_id: string;
  insee: string | null;
  code_postal: string | null;
  departement: string | null;
  avant: EtatEvenement | null;
  apres: EtatEvenement | null;
}

interface Nouveaute {
  id: string;
  genre: string;
  cle_ban: string;
  date_source: string;
  entree_le: Date;
  detail: Record<string, unknown>;
  source: string;
}

interface Abonnement {
  id: string;
  organisation_id: string;
  genres: string[];
  filtres: Parameters<typeof passeFiltres>[0];
  evenement_depart: string;
}

interface Veille {
  id: string;
  organisation_id: string;
  nature: Nature;
  criteres: Criteres;
  annonce_id: string | null;
  cle_ban: string | null;
  evenement_depart: string;
  adresse_depart: string;
}

interface ResultatNouveau {
  veille: Veille;
  journal: 'annonces' | 'adresses';
  evenement_id: string;
  annonce_id: string | null;
  cle_ban: string | null;
  le: Date;
  donnees: Omit<Resultat, 'id'>;
}

const RIEN: Repartition = { evenements: 0, nouveautes: 0, livraisons: 0, resultats: 0, abonnements: [], reste: false };

export async function repartir(db: Db, limite = 1000): Promise<Repartition | null> {
  // The loop asks every second: when neither journal went past its cursor, nothing is locked or written.
  const { rows } = await db.query<{ nouveau: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM annonces_evenements e JOIN diffusion_curseurs c ON c.journal = 'annonces'
                     WHERE e.dataset = 'live' AND e.id > c.dernier_id)
         OR EXISTS (SELECT 1 FROM journal_adresses j JOIN diffusion_curseurs c ON c.journal = 'adresses'
                     WHERE j.dataset = 'live' AND j.id > c.dernier_id) AS nouveau`,
  );
  if (!rows[0].nouveau) return RIEN;
  return transaction(db, async (client) => {
    const curseurs = await client.query<{ journal: 'annonces' | 'adresses'; dernier_id: string }>(
      'SELECT journal, dernier_id FROM diffusion_curseurs ORDER BY journal FOR UPDATE SKIP LOCKED',
    );
    if (curseurs.rows.length < 2) return null;
    const apres = Object.fromEntries(curseurs.rows.map((r) => [r.journal, r.dernier_id]));
    // Taken once the cursors are held: the clock of successive fan-outs grows with the ids they draw.
    const maintenant = (await client.query<{ t: Date }>('SELECT clock_timestamp() AS t')).rows[0].t;

    const evenements = (
      await client.query<EvenementAnnonce>(
        // ORDER BY e.id, the number: `id` alone would name the text column of the select list, where '10000' sorts
        // before '2000', and a page crossing a power of ten would skip the events between (and the cursor past them).
        `SELECT id::text, genre, le, annonce_id, insee, code_postal, departement, avant, apres FROM annonces_evenements e
          WHERE dataset = 'live' AND id > $1 ORDER BY e.id LIMIT $2`,
        [apres.annonces, limite + 1],
      )
    ).rows;
    const nouveautes = (
      await client.query<Nouveaute>(
        // ORDER BY j.id, the number, as above.
        `SELECT id::text, genre, cle_ban, to_char(date_source, 'YYYY-MM-DD') AS date_source, entree_le, detail, source
           FROM journal_adresses j WHERE dataset = 'live' AND id > $1 ORDER BY j.id LIMIT $2`,
        [apres.adresses, limite + 1],
      )
    ).rows;
    const reste = evenements.length > limite || nouveautes.length > limite;
    evenements.splice(limite);
    nouveautes.splice(limite);
    if (evenements.length === 0 && nouveautes.length === 0) {
      return RIEN;
    }

    // Nobody listens (no subscription to a listing genre, no watch or alert): the cursors move, nothing is read.
    const ecoute = await client.query<{ oui: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM webhooks WHERE actif AND supprime_le IS NULL AND genres && $1::text[])
              OR EXISTS (SELECT 1 FROM veilles WHERE supprime_le IS NULL) AS oui`,
      [LISTING_GENRES],
    );
    const abonnes = new Set<string>();
    let livraisons = 0;
    let resultats: ResultatEcrit[] = [];
    if (ecoute.rows[0].oui) {
      const annonces = await lireAnnoncesEnListe(
        client,
        'live',
        evenements.map((e) => e.annonce_id),
        { lienOrigine: false, maintenant },
      );
      const charges = evenements.map((ev) => ({ ev, annonce: annonces.get(ev.annonce_id) }));
      livraisons = await livrerEvenements(client, charges, maintenant, abonnes);
      resultats = await resultatsDe(client, charges, nouveautes, maintenant);
      livraisons += await livrerResultats(client, resultats, abonnes);
    }

    if (evenements.length > 0) {
      await client.query(`UPDATE diffusion_curseurs SET dernier_id = $1 WHERE journal = 'annonces'`, [
        evenements.at(-1)!.id,
      ]);
    }
    if (nouveautes.length > 0) {
      await client.query(`UPDATE diffusion_curseurs SET dernier_id = $1 WHERE journal = 'adresses'`, [
        nouveautes.at(-1)!.id,
      ]);
    }
    return {
      evenements: evenements.length,
      nouveautes: nouveautes.length,
      livraisons,
      resultats: resultats.length,
      abonnements: [...abonnes],
      reste,
    };
  });
}

interface Charge {
  ev: EvenementAnnonce;
  annonce: LigneListe | undefined;
}

type ResultatEcrit = ResultatNouveau & { id: string };

/** Where the filters place a listing event: its place then, the listing's type, the price it is about. */
function lieuDe(c: Charge): LieuAnnonce | null {
  if (!c.annonce) return null;
  return {
    insee: c.ev.insee,
    code_postal: c.ev.code_postal,
    departement: c.ev.departement,
    type: TYPE_FILTRE[c.annonce.type],
    prix: c.ev.apres?.prix ?? c.ev.avant?.prix ?? c.annonce.prix,
  };
}

async function livrerEvenements(
  client: PoolClient,
  charges: Charge[],
  maintenant: Date,
  abonnes: Set<string>,
): Promise<number> {
  if (charges.length === 0) return 0;
  const { rows: abonnements } = await client.query<Abonnement>(
    `SELECT id, organisation_id, genres, filtres, evenement_depart::text FROM webhooks
      WHERE actif AND supprime_le IS NULL AND genres && $1::text[]`,
    [LISTING_GENRES],
  );
  if (abonnements.length === 0) return 0;
  const lignes: Array<{ webhook_id: string; genre: string; evenement: string; charge: number; le: Date }> = [];
  for (const [i, c] of charges.entries()) {
    const lieu = lieuDe(c);
    for (const w of abonnements) {
      if (BigInt(c.ev.id) <= BigInt(w.evenement_depart) || !w.genres.includes(c.ev.genre)) continue;
      if (Object.keys(w.filtres).length > 0 && (!lieu || !passeFiltres(w.filtres, lieu))) continue;
      lignes.push({ webhook_id: w.id, genre: c.ev.genre, evenement: `annonce:${c.ev.id}`, charge: i, le: c.ev.le });
    }
  }
  if (lignes.length === 0) return 0;
  // The bodies of the events that go somewhere, once each.
  const utiles = [...new Set(lignes.map((l) => l.charge))];
  const { rows: ids } = await client.query<{ id: string }>(
    `INSERT INTO diffusion_charges (donnees) SELECT d FROM unnest($1::jsonb[]) WITH ORDINALITY AS u(d, n) ORDER BY n
     RETURNING id::text`,
    // As the feed serves it; webhooks carry no portal link (the scope lien_origine is a key's, not a subscription's).
    [
      utiles.map((i) => {
        const { ev, annonce } = charges[i];
        const lu = { ...ev, id: Number(ev.id), le: ev.le.toISOString() };
        return evenementServi(lu, annonce);
      }),
    ],
  );
  const chargeId = new Map(utiles.map((i, k) => [i, ids[k].id]));
  const inserees = await client.query<{ webhook_id: string }>(
    `INSERT INTO livraisons (webhook_id, genre, evenement, charge_id, credits, en_file, le, prochaine_le)
     SELECT w, g, e, c, $5, true, l, $6
       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $7::timestamptz[]) AS u(w, g, e, c, l)
     ON CONFLICT (webhook_id, evenement) WHERE evenement IS NOT NULL DO NOTHING
     RETURNING webhook_id`,
    [
      lignes.map((l) => l.webhook_id),
      lignes.map((l) => l.genre),
      lignes.map((l) => l.evenement),
      lignes.map((l) => chargeId.get(l.charge)),
      CREDITS_PAR_EVENEMENT,
      maintenant,
      lignes.map((l) => l.le),
    ],
  );
  for (const r of inserees.rows) abonnes.add(r.webhook_id);
  return inserees.rowCount ?? 0;
}

/** The watches and alerts the events may concern: every watch, the alerts on these listings and addresses. */
async function veillesConcernees(client: PoolClient, charges: Charge[], nouveautes: Nouveaute[]): Promise<Veille[]> {
  const cles = [
    ...new Set([
      ...charges.map((c) => c.annonce?.cle_ban).filter((c): c is string => !!c),
      ...nouveautes.map((n) => n.cle_ban),
    ]),
  ];
  const { rows } = await client.query<Veille>(
    `SELECT id, organisation_id, nature, criteres, annonce_id, cle_ban, evenement_depart::text, adresse_depart::text
       FROM veilles
      WHERE supprime_le IS NULL
        AND (nature = 'recherche' OR annonce_id = ANY($1::text[]) OR cle_ban = ANY($2::text[]))`,
    [[...new Set(charges.map((c) => c.ev.annonce_id))], cles],
  );
  return rows;
}

async function resultatsDe(
  client: PoolClient,
  charges: Charge[],
  nouveautes: Nouveaute[],
  maintenant: Date,
): Promise<ResultatEcrit[]> {
  const veilles = await veillesConcernees(client, charges, nouveautes);
  if (veilles.length === 0) return [];
  const nouveaux: ResultatNouveau[] = [];
  const resultat = (
    v: Veille,
    journal: 'annonces' | 'adresses',
    evenementId: string,
    le: Date,
    evenement: Evenement,
    annonce: LigneListe | undefined,
    cleBan: string | null,
  ) => {
    nouveaux.push({
      veille: v,
      journal,
      evenement_id: evenementId,
      annonce_id: journal === 'annonces' && annonce ? annonce.id : null,
      cle_ban: cleBan,
      le,
      donnees: {
        genre: GENRE_RESULTAT[v.nature],
        veille_id: v.id,
        nature: v.nature,
        le: le.toISOString(),
        apparu_le: maintenant.toISOString(),
        disponible_le: new Date(maintenant.getTime() + DELAI_RESULTAT_S * 1000).toISOString(),
        evenement,
        annonce: annonce ? enListe(annonce) : null,
        cle_ban: cleBan,
      },
    });
  };
  const vus = new Set<string>();
  for (const c of charges) {
    const a = c.annonce;
    if (!a) continue;
    const evenement: Evenement = {
      journal: 'annonces',
      id: c.ev.id,
      genre: c.ev.genre,
      le: c.ev.le.toISOString(),
      avant: c.ev.avant as Record<string, unknown> | null,
      apres: c.ev.apres as Record<string, unknown> | null,
      date_source: null,
      detail: null,
      source: null,
    };
    const servie = a.principale && a.statut === 'actif';
    for (const v of veilles) {
      if (BigInt(c.ev.id) <= BigInt(v.evenement_depart)) continue;
      const concerne =
        v.nature === 'recherche'
          ? servie &&
            !vus.has(`${v.id}|${a.id}`) &&
            passeCriteres(v.criteres, {
              ...lieuDe(c)!,
              prix: a.prix,
              surface: a.surface,
              score: a.score,
              rendement_brut: a.rendement_brut_pct,
            })
          : v.nature === 'annonce'
            ? v.annonce_id === a.id && ALERTE_ANNONCE.includes(c.ev.genre)
            : v.cle_ban === a.cle_ban && ALERTE_ADRESSE.includes(c.ev.genre);
      if (!concerne) continue;
      // A watch's result is a new match: one listing once (the table's unique index says so for earlier batches).
      if (v.nature === 'recherche') vus.add(`${v.id}|${a.id}`);
      resultat(v, 'annonces', c.ev.id, c.ev.le, evenement, a, a.cle_ban);
    }
  }
  for (const n of nouveautes) {
    for (const v of veilles) {
      if (v.nature !== 'adresse' || v.cle_ban !== n.cle_ban || BigInt(n.id) <= BigInt(v.adresse_depart)) continue;
      resultat(
        v,
        'adresses',
        n.id,
        n.entree_le,
        {
          journal: 'adresses',
          id: n.id,
          genre: n.genre,
          le: n.entree_le.toISOString(),
          avant: null,
          apres: null,
          date_source: n.date_source,
          detail: n.detail,
          source: n.source,
        },
        undefined,
        n.cle_ban,
      );
    }
  }
  if (nouveaux.length === 0) return [];
  const { rows } = await client.query<{ id: string; cle: string }>(
    `INSERT INTO veilles_resultats (organisation_id, veille_id, genre, journal, evenement_id, annonce_id, cle_ban, le,
                                    releve_le, disponible_le, donnees)
     SELECT o, v, g, j, e, a, c, l, $9, $10, d
       FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
                   $8::timestamptz[], $11::jsonb[]) WITH ORDINALITY AS u(o, v, g, j, e, a, c, l, d, n)
      ORDER BY n
     ON CONFLICT DO NOTHING
     RETURNING id::text, veille_id || '|' || journal || '|' || evenement_id AS cle`,
    [
      nouveaux.map((r) => r.veille.organisation_id),
      nouveaux.map((r) => r.veille.id),
      nouveaux.map((r) => r.donnees.genre),
      nouveaux.map((r) => r.journal),
      nouveaux.map((r) => r.evenement_id),
      nouveaux.map((r) => r.annonce_id),
      nouveaux.map((r) => r.cle_ban),
      nouveaux.map((r) => r.le),
      maintenant,
      new Date(maintenant.getTime() + DELAI_RESULTAT_S * 1000),
      nouveaux.map((r) => JSON.stringify(r.donnees)),
    ],
  );
  // (veille, journal, event) is unique: the rows written, matched back to what they were written from.
  const parCle = new Map(nouveaux.map((r) => [`${r.veille.id}|${r.journal}|${r.evenement_id}`, r]));
  return rows.map((r) => ({ ...parCle.get(r.cle)!, id: r.id }));
}

async function livrerResultats(client: PoolClient, resultats: ResultatEcrit[], abonnes: Set<string>): Promise<number> {
  if (resultats.length === 0) return 0;
  const { rows } = await client.query<{ webhook_id: string }>(
    `INSERT INTO livraisons (webhook_id, genre, evenement, payload, credits, en_file, le, prochaine_le)
     SELECT w.id, r.genre, 'resultat:' || r.id, r.corps, $4, true, r.apparu, r.disponible
       FROM unnest($1::text[], $2::uuid[], $3::jsonb[]) AS u(id, organisation_id, corps)
       JOIN LATERAL (SELECT u.id, u.organisation_id, u.corps, u.corps->>'genre' AS genre,
                            (u.corps->>'apparu_le')::timestamptz AS apparu,
                            (u.corps->>'disponible_le')::timestamptz AS disponible) r ON true
       JOIN webhooks w ON w.organisation_id = r.organisation_id AND r.genre = ANY (w.genres)
                      AND w.actif AND w.supprime_le IS NULL AND w.cree_le <= r.apparu
     ON CONFLICT (webhook_id, evenement) WHERE evenement IS NOT NULL DO NOTHING
     RETURNING webhook_id`,
    [
      resultats.map((r) => r.id),
      resultats.map((r) => r.veille.organisation_id),
      resultats.map((r) => JSON.stringify({ id: r.id, ...r.donnees })),
      CREDITS_PAR_EVENEMENT,
    ],
  );
  for (const r of rows) abonnes.add(r.webhook_id);
  return rows.length;
}

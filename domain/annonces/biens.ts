import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../../db/client.ts';
import { distanceM } from '../../lib/geometrie.ts';
import { rechercher } from '../adresses/resoudre.ts';
import type { Dataset } from '../platform/sandbox.ts';
import type { Precision, TypeBien } from './format.ts';

/**
 * Properties: the listings of one dwelling, on several portals or by several agencies, share a `bien_uid`.
 *
 * The rule (REGLE_BIEN) is deliberately strict: merging two different flats hides one of them from the feed, while
 * leaving two listings of one flat apart only shows it twice. Two listings are one property when all of this holds:
 * same commune (INSEE), same type; the same place, that is the same BAN number when both are attached to one, else
 * positions within 30 m when both are given to the address (`precision` adresse), within 150 m when one is only
 * approximate (a position at the commune's centre, or none, never merges); living surfaces within 3 % (1 m² at
 * least); the same number of rooms and, for flats, the same floor, whenever both listings give them; asking prices
 * within 5 % of the higher (an agency's fees, a rounding). A listing takes the property of the oldest listing it
 * matches among those online or withdrawn less than 180 days before; otherwise it starts a property of its own. A
 * property is given once, when its first snapshot is read, and kept: a later snapshot never moves a listing to
 * another property.
 */
export const REGLE_BIEN =
  'Deux annonces sont un même bien quand tout concorde : même commune (INSEE) et même type ; même lieu, c’est-à-dire même numéro BAN quand les deux y sont rattachées, sinon positions à 30 m au plus si les deux sont données à l’adresse (150 m si l’une n’est qu’approchée ; une position au centre de la commune, ou aucune, ne rapproche jamais) ; surfaces habitables à 3 % près (1 m² au moins) ; même nombre de pièces et, pour un appartement, même étage quand les deux annonces les donnent ; prix à 5 % près du plus élevé. Une annonce rejoint le bien de la plus ancienne annonce qui concorde parmi celles en ligne ou retirées depuis moins de 180 jours, sinon elle ouvre un bien ; le bien est fixé au premier relevé et ne change plus.';

/** What the rule compares. */
export interface Signature {
  insee: string | null;
  type: TypeBien;
  cle_ban: string | null;
  lat: number | null;
  lon: number | null;
  precision_position: Precision;
  surface: number | null;
  pieces: number | null;
  etage: number | null;
  prix: number | null;
}

const RAYON_ADRESSE_M = 30;
const RAYON_APPROCHE_M = 150;
const ECART_SURFACE = 0.03;
const ECART_PRIX = 0.05;
export const FENETRE_RETRAIT_JOURS = 180;

const situee = (s: Signature) =>
  s.lat !== null && s.lon !== null && (s.precision_position === 'adresse' || s.precision_position === 'approchee');

function memeLieu(a: Signature, b: Signature): boolean {
  if (a.cle_ban && b.cle_ban) return a.cle_ban === b.cle_ban;
  if (!situee(a) || !situee(b)) return false;
  const rayon =
    a.precision_position === 'adresse' && b.precision_position === 'adresse' ? RAYON_ADRESSE_M : RAYON_APPROCHE_M;
  return distanceM({ lat: a.lat!, lon: a.lon! }, { lat: b.lat!, lon: b.lon! }) <= rayon;
}

const differents = (x: number | null, y: number | null) => x !== null && y !== null && x !== y;

/** Whether two listings are one property (REGLE_BIEN). */
export function memeBien(a: Signature, b: Signature): boolean {
  if (!a.insee || a.insee !== b.insee || a.type !== b.type) return false;
  if (!memeLieu(a, b)) return false;
  if (a.surface === null || b.surface === null) return false;
  if (Math.abs(a.surface - b.surface) > Math.max(1, ECART_SURFACE * Math.max(a.surface, b.surface))) return false;
  if (differents(a.pieces, b.pieces)) return false;
  if (a.type === 'appartement' && differents(a.etage, b.etage)) return false;
  if (a.prix === null || b.prix === null) return false;
  return Math.abs(a.prix - b.prix) <= ECART_PRIX * Math.max(a.prix, b.prix);
}

/** A new property's identifier: random, like a listing's, so that it tells nothing of the portals. */
export function nouveauBienUid(): string {
  return `bien_${randomBytes(10)
    .toString('base64url')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '0')}`;
}

export interface Candidat extends Signature {
  bien_uid: string;
  entree_le: Date;
}

/**
 * The listings the database holds that a new listing could belong with (same commune, type and surface band, online
 * or withdrawn in the window), oldest first: the rule is then applied to each.
 */
export async function candidatsBien(db: Queryable, dataset: Dataset, s: Signature, vuLe: string): Promise<Candidat[]> {
  if (!s.insee || s.surface === null) return [];
  const { rows } = await db.query<Candidat>(
    `SELECT bien_uid, entree_le, insee, type, cle_ban, lat, lon, precision_position, surface, pieces, etage, prix
       FROM annonces
      WHERE dataset = $1 AND insee = $2 AND type = $3 AND surface BETWEEN $4 AND $5
        AND (statut <> 'retire' OR retire_le >= $6::timestamptz - make_interval(days => $7))
      ORDER BY entree_le, id
      LIMIT 200`,
    [
      dataset,
      s.insee,
      s.type,
      s.surface * (1 - ECART_SURFACE) - 1,
      s.surface * (1 + ECART_SURFACE) + 1,
      vuLe,
      FENETRE_RETRAIT_JOURS,
    ],
  );
  return rows;
}

/** How near a position must be to a BAN number to stand at it. */
const RAYON_NUMERO_PORTAIL_M = 15;
const RAYON_NUMERO_VALIDE_M = 40;

async function numeroProche(
  db: Queryable,
  dataset: Dataset,
  lat: number,
  lon: number,
  rayonM: number,
): Promise<string | null> {
  const { rows } = await db.query<{ cle_ban: string }>(
    `SELECT cle_ban FROM adresses
      WHERE dataset = $1 AND type = 'numero' AND earth_box(ll_to_earth($2, $3), $4) @> ll_to_earth(lat, lon)
        AND earth_distance(ll_to_earth($2, $3), ll_to_earth(lat, lon)) <= $4
      ORDER BY ll_to_earth(lat, lon) <-> ll_to_earth($2, $3) LIMIT 1`,
    [dataset, lat, lon, rayonM],
  );
  return rows[0]?.cle_ban ?? null;
}

/**
 * The BAN number a listing stands at: the address a user validated for it (valider_adresse, stored under the
 * service id or `<portail>:<identifiant>`: its position, else its text read by the address search, a number with a
 * score of 0.8 at least), else, when the portal gives its position to the address, the number within 15 m.
 */
export async function rattacherBan(
  db: Db,
  client: Queryable,
  dataset: Dataset,
  annonce: { id: string; idPortail: string; lat: number | null; lon: number | null; precision: Precision },
): Promise<string | null> {
  const { rows } = await client.query<{ libelle: string; lat: number | null; lon: number | null }>(
    `SELECT libelle, lat, lon FROM adresses_validees WHERE annonce_id = ANY($1::text[])
      ORDER BY valide_le DESC LIMIT 1`,
    [[annonce.id, annonce.idPortail]],
  );
  const validee = rows[0];
  if (validee) {
    if (validee.lat !== null && validee.lon !== null) {
      const cle = await numeroProche(client, dataset, validee.lat, validee.lon, RAYON_NUMERO_VALIDE_M);
      if (cle) return cle;
    }
    const [premier] = await rechercher(db, dataset, validee.libelle, null, 1);
    if (premier && premier.type === 'numero' && (premier.score ?? 0) >= 0.8 && premier.cle_ban) return premier.cle_ban;
  }
  if (annonce.precision === 'adresse' && annonce.lat !== null && annonce.lon !== null) {
    return numeroProche(client, dataset, annonce.lat, annonce.lon, RAYON_NUMERO_PORTAIL_M);
  }
  return null;
}

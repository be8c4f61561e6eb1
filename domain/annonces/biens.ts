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

/** What the candidates of a new listing are looked up by: its commune, type and surface, and when it is seen. */
export type RechercheCandidats = Pick<Signature, 'insee' | 'type' | 'surface'> & { vuLe: string };

/**
 * For each new listing, the listings the database holds that it could belong with (same commune, type and surface
 * band, online or withdrawn in the window), oldest first: the rule is then applied to each. One statement for them
 * all: the importer asks for a whole batch's at once.
 */
export async function candidatsBiens(
  db: Queryable,
  dataset: Dataset,
  recherches: RechercheCandidats[],
): Promise<Candidat[][]> {
  const out = recherches.map((): Candidat[] => []);
  const lues = recherches.flatMap((s, i) => (s.insee && s.surface !== null ? [{ ...s, i, surface: s.surface }] : []));
  if (lues.length === 0) return out;
  const { rows } = await db.query<Candidat & { i: number }>(
    `SELECT k.i, c.bien_uid, c.entree_le, c.insee, c.type, c.cle_ban, c.lat, c.lon, c.precision_position, c.surface,
            c.pieces, c.etage, c.prix
       FROM unnest($2::int[], $3::text[], $4::text[], $5::float8[], $6::float8[], $7::timestamptz[])
            AS k(i, insee, type, surface_min, surface_max, vu_le)
      CROSS JOIN LATERAL (
            SELECT a.id, a.bien_uid, a.entree_le, a.insee, a.type, a.cle_ban, a.lat, a.lon, a.precision_position,
                   a.surface, a.pieces, a.etage, a.prix
              FROM annonces a
             WHERE a.dataset = $1 AND a.insee = k.insee AND a.type = k.type
               AND a.surface BETWEEN k.surface_min AND k.surface_max
               AND (a.statut <> 'retire' OR a.retire_le >= k.vu_le - make_interval(days => $8))
             ORDER BY a.entree_le, a.id
             LIMIT 200) c
      ORDER BY k.i, c.entree_le, c.id`,
    [
      dataset,
      lues.map((s) => s.i),
      lues.map((s) => s.insee),
      lues.map((s) => s.type),
      lues.map((s) => s.surface * (1 - ECART_SURFACE) - 1),
      lues.map((s) => s.surface * (1 + ECART_SURFACE) + 1),
      lues.map((s) => s.vuLe),
      FENETRE_RETRAIT_JOURS,
    ],
  );
  for (const { i, ...candidat } of rows) out[i].push(candidat);
  return out;
}

/** How near a position must be to a BAN number to stand at it. */
const RAYON_NUMERO_PORTAIL_M = 15;
const RAYON_NUMERO_VALIDE_M = 40;

/** A position, and how near a BAN number must be to it. */
export interface PointBan {
  lat: number;
  lon: number;
  rayonM: number;
}

/**
 * For each point, the nearest BAN number within its radius, or null. One statement for them all: the importer asks
 * for a whole batch's at once.
 */
export async function numerosProches(
  db: Queryable,
  dataset: Dataset,
  points: PointBan[],
): Promise<Array<string | null>> {
  const out = points.map((): string | null => null);
  if (points.length === 0) return out;
  const { rows } = await db.query<{ i: number; cle_ban: string }>(
    `SELECT p.i, n.cle_ban
       FROM unnest($2::float8[], $3::float8[], $4::float8[]) WITH ORDINALITY AS p(lat, lon, rayon, i)
      CROSS JOIN LATERAL (
            SELECT b.cle_ban FROM adresses b
             WHERE b.dataset = $1 AND b.type = 'numero'
               AND earth_box(ll_to_earth(p.lat, p.lon), p.rayon) @> ll_to_earth(b.lat, b.lon)
               AND earth_distance(ll_to_earth(p.lat, p.lon), ll_to_earth(b.lat, b.lon)) <= p.rayon
             ORDER BY ll_to_earth(b.lat, b.lon) <-> ll_to_earth(p.lat, p.lon)
             LIMIT 1) n`,
    [dataset, points.map((p) => p.lat), points.map((p) => p.lon), points.map((p) => p.rayonM)],
  );
  for (const { i, cle_ban } of rows) out[i - 1] = cle_ban;
  return out;
}

/** An address a user validated for a listing (valider_adresse). */
export interface AdresseValidee {
  libelle: string;
  lat: number | null;
  lon: number | null;
  /** To the microsecond, in UTC: the latest of a listing's validations wins. */
  valide_le: string;
}

/**
 * The address validated under each identifier (a service id or `<portail>:<identifiant>`, as the user gave it), or
 * null. One statement for them all: the importer asks for a whole batch's at once.
 */
export async function adressesValidees(db: Queryable, ids: string[]): Promise<Array<AdresseValidee | null>> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<AdresseValidee & { annonce_id: string }>(
    `SELECT annonce_id, libelle, lat, lon,
            to_char(valide_le AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS valide_le
       FROM adresses_validees WHERE annonce_id = ANY($1::text[])`,
    [ids],
  );
  const parId = new Map(rows.map(({ annonce_id, ...v }) => [annonce_id, v]));
  return ids.map((id) => parId.get(id) ?? null);
}

/** The address a listing stands at by its users: the latest validation under any of its identifiers. */
export function derniereValidee(validees: Array<AdresseValidee | null>): AdresseValidee | null {
  return validees.reduce<AdresseValidee | null>(
    (derniere, v) => (v && (!derniere || v.valide_le > derniere.valide_le) ? v : derniere),
    null,
  );
}

/** Where a listing's BAN number is looked for, in order: a position (the nearest number within its radius) or a text. */
export type PisteBan = { point: PointBan } | { libelle: string };

/**
 * Where the BAN number a listing stands at is looked for, the first that finds one winning: the address a user
 * validated for it (its position, else its text read by the address search, a number with a score of 0.8 at least),
 * else, when the portal gives its position to the address, the number within 15 m.
 */
export function pistesBan(
  annonce: { lat: number | null; lon: number | null; precision_position: Precision },
  validee: AdresseValidee | null,
): PisteBan[] {
  const pistes: PisteBan[] = [];
  if (validee) {
    if (validee.lat !== null && validee.lon !== null) {
      pistes.push({ point: { lat: validee.lat, lon: validee.lon, rayonM: RAYON_NUMERO_VALIDE_M } });
    }
    pistes.push({ libelle: validee.libelle });
  }
  if (annonce.precision_position === 'adresse' && annonce.lat !== null && annonce.lon !== null) {
    pistes.push({ point: { lat: annonce.lat, lon: annonce.lon, rayonM: RAYON_NUMERO_PORTAIL_M } });
  }
  return pistes;
}

/** The BAN number a listing stands at (pistesBan); `numero` answers a position, read ahead for a batch by the importer. */
export async function rattacherBan(
  db: Db,
  dataset: Dataset,
  pistes: PisteBan[],
  numero: (point: PointBan) => Promise<string | null>,
): Promise<string | null> {
  for (const piste of pistes) {
    if ('point' in piste) {
      const cle = await numero(piste.point);
      if (cle) return cle;
      continue;
    }
    const [premier] = await rechercher(db, dataset, piste.libelle, null, 1);
    if (premier && premier.type === 'numero' && (premier.score ?? 0) >= 0.8 && premier.cle_ban) return premier.cle_ban;
  }
  return null;
}

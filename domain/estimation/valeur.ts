import type { Queryable } from '../../db/client.ts';
import { containsPoint, degreeCellsAround } from '../../lib/geometrie.ts';
import { dansCellules } from '../dvf/operations.ts';
import type { Dataset } from '../platform/sandbox.ts';
import type { ContourIris } from '../territoire/import-iris.ts';
import { departementOf } from '../communes.ts';

/**
 * The deterministic value of a dwelling: its DVF comparables, else the commune's scale, the time index that brings
 * their prices to the latest vintage, and the half-width of the range measured by the backtest. Used by estimer_bien
 * and by the backtest itself (domain/estimation/backtest.ts), so that what is measured is what is served.
 */

export type TypeBien = 'appartement' | 'maison';
export type Socle = 'comparables_dvf' | 'iris' | 'commune';

/** Radii tried in turn around the address, until enough comparables are found; 3 km is the documented limit. */
export const RAYONS_M = [300, 600, 1000, 2000, 3000] as const;
/** Comparables wanted before the radius stops growing, and the least that makes a `comparables_dvf` estimate. */
export const COMPARABLES_VISES = 12;
export const COMPARABLES_MIN = 5;
/** The surface band: comparables within ±30 % of the dwelling's surface. */
export const BANDE_SURFACE = 0.3;
/** Comparables kept, the most recent vintages first, then the nearest. */
export const COMPARABLES_MAX = 30;
/** Vintages read before the latest: older sales say little of today's prices, even indexed. */
export const MILLESIMES_LUS = 3;
/** Sales the commune's scale needs to be served. */
export const COMMUNE_MIN = 5;

/**
 * Half-widths used while the backtest has not measured the scale (no row in modeles_mesures): wide on purpose, and
 * said in `limites`; never presented as calibrated.
 */
export const DEMI_LARGEUR_PAR_DEFAUT: Record<Socle, number> = { comparables_dvf: 25, iris: 30, commune: 35 };

/** Plain one-dwelling sales: the price is the price of that dwelling (motif null: no block sale, no exchange…). */
export const VENTE_SIMPLE = `m.motif IS NULL AND m.logements = 1 AND m.nature IN ('vente', 'vefa')
  AND m.prix_m2 IS NOT NULL AND NOT m.prix_atypique AND NOT m.surface_atypique AND NOT m.doublon_probable`;

/**
 * Distance in metres from ($2, $3) to a sale, on the plane tangent at the address: within 3 km it differs from
 * earthdistance's great circle (same sphere, 6 378 168 m) by less than a metre, and it is plain arithmetic where
 * `earth_distance(ll_to_earth(…))` calls SQL functions that PostgreSQL does not inline (some 15 µs per
 * sale read, most of an estimate's time in a city).
 */
const DISTANCE_M = `(111319.49 * sqrt(power(m.lat - $2, 2) + power((m.lon - $3) * cos(radians($2)), 2)))`;

export interface Comparable {
  id_mutation: string;
  date: string;
  millesime: number;
  type: TypeBien;
  surface_m2: number;
  prix: number;
  prix_m2: number;
  /** €/m² brought to the latest vintage by the departmental index. */
  prix_m2_indexe: number;
  distance_m: number;
  adresse: string | null;
  code_postal: string | null;
  lat: number | null;
  lon: number | null;
}

export interface Lieu {
  insee: string;
  lat: number | null;
  lon: number | null;
}

export interface Options {
  /** Only sales before this date (AAAA-MM-JJ): the backtest estimates held-out sales from earlier ones. */
  avant?: string;
}

export interface ValeurBrute {
  socle: Socle;
  nature: 'mesure' | 'estime';
  prix_m2_socle: number;
  ventes: number;
  rayon_m: number | null;
  millesime: number | null;
  comparables: Comparable[];
  millesimes: number[];
  /** Whether prices were brought to the latest vintage (false while the index is not built). */
  indexe: boolean;
  /** The IRIS of the `iris` scale. */
  iris?: { code: string; nom: string | null };
}

export function mediane(valeurs: number[]): number | null {
  if (valeurs.length === 0) return null;
  const v = [...valeurs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** The departmental index of a type: vintage → median €/m²; empty when `npm run modeles` has not built it. */
export async function indiceDepartement(
  db: Queryable,
  dataset: Dataset,
  departement: string,
  type: TypeBien,
): Promise<Map<number, number>> {
  const { rows } = await db.query<{ millesime: number; prix_m2_median: number }>(
    `SELECT millesime, prix_m2_median FROM estimation_indices
      WHERE dataset = $1 AND departement = $2 AND type_bien = $3`,
    [dataset, departement, type],
  );
  return new Map(rows.map((r) => [r.millesime, r.prix_m2_median]));
}

/** The factor that brings a price of `millesime` to `cible` (1 when either vintage is missing from the index). */
function facteur(indice: Map<number, number>, millesime: number, cible: number): number {
  const de = indice.get(millesime);
  const vers = indice.get(cible);
  return de && vers ? vers / de : 1;
}

interface LigneComparable {
  id_mutation: string;
  date_mutation: string;
  millesime: number;
  valeur_fonciere: string;
  surface_logements: number;
  prix_m2: number;
  distance_m: number;
  adresse_numero: number | null;
  adresse_suffixe: string | null;
  adresse_voie: string | null;
  code_postal: string | null;
  lat: number | null;
  lon: number | null;
}

/** The latest vintage held (before `avant` when given), or null without any sale. */
async function dernierMillesime(db: Queryable, dataset: Dataset, avant?: string): Promise<number | null> {
  if (!avant) {
    const { rows } = await db.query<{ m: number | null }>(
      `SELECT max(millesime)::int AS m FROM dvf_millesimes WHERE dataset = $1 AND mutations > 0`,
      [dataset],
    );
    return rows[0]?.m ?? null;
  }
  return Number(avant.slice(0, 4)) - (avant.slice(5) === '01-01' ? 1 : 0);
}

function adresseTexte(l: LigneComparable): string | null {
  if (!l.adresse_voie) return null;
  const numero =
    l.adresse_numero === null ? '' : `${l.adresse_numero}${l.adresse_suffixe ? ` ${l.adresse_suffixe}` : ''} `;
  return `${numero}${l.adresse_voie}`;
}

/**
 * The value's base: comparables of the same type within a radius widened step by step, else the scale of the IRIS of
 * the address, else the commune's.
 */
export async function valeurBrute(
  db: Queryable,
  dataset: Dataset,
  lieu: Lieu,
  type: TypeBien,
  surface: number,
  options: Options = {},
): Promise<ValeurBrute | null> {
  // Two independent reads, side by side: an estimate is a chain of round trips, each one fewer counts.
  const [dernier, indice] = await Promise.all([
    dernierMillesime(db, dataset, options.avant),
    indiceDepartement(db, dataset, departementOf(lieu.insee), type),
  ]);
  if (dernier === null) return null;
  const premier = dernier - MILLESIMES_LUS;
  const avant = options.avant ?? '9999-12-31';
  const indexer = (l: LigneComparable): Comparable => ({
    id_mutation: l.id_mutation,
    date: l.date_mutation,
    millesime: l.millesime,
    type,
    surface_m2: l.surface_logements,
    prix: Number(l.valeur_fonciere),
    prix_m2: Math.round(l.prix_m2),
    prix_m2_indexe: l.prix_m2 * facteur(indice, l.millesime, dernier),
    distance_m: Math.round(l.distance_m / 50) * 50,
    adresse: adresseTexte(l),
    code_postal: l.code_postal,
    lat: l.lat,
    lon: l.lon,
  });
  const colonnes = `m.id_mutation, to_char(m.date_mutation, 'YYYY-MM-DD') AS date_mutation, m.millesime::int AS millesime,
    m.valeur_fonciere, m.surface_logements, m.prix_m2, m.adresse_numero, m.adresse_suffixe, m.adresse_voie,
    m.code_postal, m.lat, m.lon`;

  if (lieu.lat !== null && lieu.lon !== null) {
    const max = RAYONS_M[RAYONS_M.length - 1];
    const lire = async (r: number) =>
      (
        await db.query<LigneComparable>({
          // Prepared once per connection: planning this read over the vintages' partitions cost as much as running it.
          name: 'estimation_comparables',
          text: `SELECT ${colonnes}, ${DISTANCE_M} AS distance_m
             FROM dvf_mutations m
            WHERE m.dataset = $1 AND m.millesime BETWEEN $5 AND $6 AND ${dansCellules(4)}
              AND ${DISTANCE_M} <= $7
              AND m.date_mutation < $8::date AND m.types_locaux @> ARRAY[$9]::text[]
              AND m.surface_logements BETWEEN $10 AND $11 AND ${VENTE_SIMPLE}`,
          values: [
            dataset,
            lieu.lat,
            lieu.lon,
            degreeCellsAround(lieu.lat!, lieu.lon!, r),
            premier,
            dernier,
            r,
            avant,
            type,
            surface * (1 - BANDE_SURFACE),
            surface * (1 + BANDE_SURFACE),
          ],
        })
      ).rows;
    // One read at a middle radius, then, only when it holds too few, one at the widest: the same answer as widening
    // step by step (the narrowest radius that holds enough), in one round trip where sales are dense, and a ninth of
    // the rows read at 3 km in a city.
    const milieu = RAYONS_M.find((r) => r >= 1000) ?? max;
    let rows = await lire(milieu);
    if (rows.length < COMPARABLES_VISES && milieu < max) rows = await lire(max);
    const rayon =
      RAYONS_M.find((r) => rows.filter((l) => l.distance_m <= r).length >= COMPARABLES_VISES) ??
      (rows.length >= COMPARABLES_MIN ? max : null);
    if (rayon !== null) {
      const retenues = rows
        .filter((l) => l.distance_m <= rayon)
        // Ties broken by id: the same data always give the same comparables.
        .sort(
          (a, b) =>
            b.millesime - a.millesime || a.distance_m - b.distance_m || (a.id_mutation < b.id_mutation ? -1 : 1),
        )
        .slice(0, COMPARABLES_MAX)
        .map(indexer);
      const millesimes = [...new Set(retenues.map((c) => c.millesime))].sort((a, b) => b - a);
      return {
        socle: 'comparables_dvf',
        nature: 'mesure',
        prix_m2_socle: mediane(retenues.map((c) => c.prix_m2_indexe))!,
        ventes: retenues.length,
        rayon_m: rayon,
        millesime: millesimes[0] ?? null,
        comparables: retenues.sort((a, b) => a.distance_m - b.distance_m || (a.date < b.date ? 1 : -1)),
        millesimes,
        indexe: indice.size > 0,
      };
    }
  }

  // The IRIS scale: the plain sales of the type, every surface, inside the IRIS of the address (a neighbourhood of
  // about 2 000 inhabitants: nearer the address than the commune). Read by the IRIS's box, kept by its outline.
  if (lieu.lat !== null && lieu.lon !== null) {
    const { rows: irisRows } = await db.query<ContourIris>(
      `SELECT code, nom, insee, geometrie, bbox_xmin, bbox_ymin, bbox_xmax, bbox_ymax FROM iris
        WHERE dataset = $1 AND box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)) @> point($2, $3)`,
      [dataset, lieu.lon, lieu.lat],
    );
    const iris = irisRows.find((i) => containsPoint(i.geometrie, lieu.lon!, lieu.lat!));
    if (iris) {
      const { rows } = await db.query<LigneComparable>(
        `SELECT ${colonnes}, 0::float8 AS distance_m
           FROM dvf_mutations m
          WHERE m.dataset = $1 AND m.insee = $2 AND m.millesime BETWEEN $3 AND $4 AND m.date_mutation < $5::date
            AND m.types_locaux @> ARRAY[$6]::text[] AND ${VENTE_SIMPLE}
            AND m.lat BETWEEN $7 AND $8 AND m.lon BETWEEN $9 AND $10`,
        [
          dataset,
          iris.insee,
          premier,
          dernier,
          avant,
          type,
          iris.bbox_ymin,
          iris.bbox_ymax,
          iris.bbox_xmin,
          iris.bbox_xmax,
        ],
      );
      const dedans = rows.filter((l) => containsPoint(iris.geometrie, l.lon!, l.lat!));
      if (dedans.length >= COMMUNE_MIN) {
        return { ...echelle('iris', dedans.map(indexer)), iris: { code: iris.code, nom: iris.nom } };
      }
    }
  }

  // The commune's scale: its plain sales of the type, every surface, indexed.
  const { rows } = await db.query<LigneComparable>(
    `SELECT ${colonnes}, 0::float8 AS distance_m
       FROM dvf_mutations m
      WHERE m.dataset = $1 AND m.insee = $2 AND m.millesime BETWEEN $3 AND $4 AND m.date_mutation < $5::date
        AND m.types_locaux @> ARRAY[$6]::text[] AND ${VENTE_SIMPLE}`,
    [dataset, lieu.insee, premier, dernier, avant, type],
  );
  if (rows.length < COMMUNE_MIN) return null;
  return echelle('commune', rows.map(indexer));

  /** The level of a scale (IRIS or commune): the median of its indexed sales, no comparable listed. */
  function echelle(socle: 'iris' | 'commune', ventes: ReturnType<typeof indexer>[]) {
    const millesimes = [...new Set(ventes.map((c) => c.millesime))].sort((a, b) => b - a);
    return {
      socle,
      nature: 'estime' as const,
      prix_m2_socle: mediane(ventes.map((c) => c.prix_m2_indexe))!,
      ventes: ventes.length,
      rayon_m: null,
      millesime: millesimes[0] ?? null,
      comparables: [],
      millesimes,
      indexe: indice.size > 0,
    };
  }
}

export interface DemiLargeur {
  pct: number;
  calibree: boolean;
  echantillon: number | null;
  mesure_le: string | null;
}

/** The half-width the backtest measured for this type and scale, else the documented default (not calibrated). */
export async function demiLargeur(db: Queryable, dataset: Dataset, type: TypeBien, socle: Socle): Promise<DemiLargeur> {
  const { rows } = await db.query<{ valeur: number; echantillon: number | null; mesure_le: string }>(
    `SELECT valeur, echantillon, to_char(mesure_le, 'YYYY-MM-DD') AS mesure_le FROM modeles_mesures
      WHERE dataset = $1 AND modele = 'estimation' AND indicateur = 'demi_largeur_80' AND type_bien = $2 AND socle = $3`,
    [dataset, type, socle],
  );
  const r = rows[0];
  if (r) return { pct: r.valeur, calibree: true, echantillon: r.echantillon, mesure_le: r.mesure_le };
  return { pct: DEMI_LARGEUR_PAR_DEFAUT[socle], calibree: false, echantillon: null, mesure_le: null };
}

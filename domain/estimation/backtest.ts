import type { Db, Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { mediane, valeurBrute, VENTE_SIMPLE, type Socle, type TypeBien } from './valeur.ts';

/**
 * The backtest of the deterministic estimate, and the derived tables it keeps: the departmental price index
 * (estimation_indices) and the measures of the `estimation` sheet (modeles_mesures), including the calibrated
 * half-width estimer_bien serves. Run by `npm run modeles` (scripts/modeles.ts) after each DVF import.
 *
 * Method. The most recent vintage is held out; each of its plain one-dwelling sales (at most ECHANTILLON_MAX, taken
 * evenly by id) is estimated from the earlier vintages alone, exactly as estimer_bien would (same code: valeurBrute),
 * from its position and commune, type and surface. Its error is estimate / price − 1. The held-out sales are split in
 * two halves by rank: the half-width that covers 80 % of the first half's prices is the calibrated half-width; the
 * coverage reported is that of this half-width on the second half, prices it never saw. The median absolute error and
 * the shares within ±10 % and ±20 % are measured on all of them.
 */

/** The tables this module derives from the sales, rebuilt with them (and emptied with the demonstration data). */
export const TABLES_DERIVEES = ['estimation_indices', 'modeles_mesures', 'modeles_limites'] as const;

/** Held-out sales estimated at most per dataset: enough for stable quantiles, bounded in time. */
export const ECHANTILLON_MAX = 600;
/** Sales a (type, socle) group needs in each half before a half-width is published for it. */
export const GROUPE_MIN = 10;
export const COUVERTURE_NOMINALE = 0.8;
/** Held-out sales estimated at once: the reads of one estimate wait on the database, not on this process. */
const CONCURRENCE = 4;

export interface MesureGroupe {
  type_bien: TypeBien;
  socle: Socle;
  n: number;
  erreur_absolue_mediane_pct: number;
  part_10_pct: number;
  part_20_pct: number;
  demi_largeur_80_pct: number | null;
  couverture_pct: number | null;
  n_calibration: number;
  n_controle: number;
}

export interface Backtest {
  millesime_teste: number | null;
  mesure_le: string;
  perimetre: string;
  estimees: number;
  non_estimees: number;
  groupes: MesureGroupe[];
  /**
   * The coverage of the served ranges over every held-out sale of a calibrated group (each with its group's
   * half-width): what a user meets across estimates. Null when no group is calibrated.
   */
  ensemble: { couverture_pct: number; n_controle: number } | null;
  limites: string[];
}

/** Rebuilds the departmental index: median €/m² of plain sales per département, type and vintage (10 sales at least). */
export async function reconstruireIndices(db: Queryable, dataset: Dataset): Promise<number> {
  await db.query(`DELETE FROM estimation_indices WHERE dataset = $1`, [dataset]);
  const { rowCount } = await db.query(
    `INSERT INTO estimation_indices (dataset, departement, type_bien, millesime, prix_m2_median, n)
     SELECT $1, m.departement, t.type_bien, m.millesime,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY m.prix_m2), count(*)
       FROM dvf_mutations m
       JOIN (VALUES ('appartement'), ('maison')) AS t (type_bien) ON m.types_locaux @> ARRAY[t.type_bien]::text[]
      WHERE m.dataset = $1 AND ${VENTE_SIMPLE}
      GROUP BY m.departement, t.type_bien, m.millesime
     HAVING count(*) >= 10`,
    [dataset],
  );
  return rowCount ?? 0;
}

function quantile(sorted: number[], q: number): number {
  const i = (sorted.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
}

const pct = (v: number) => Math.round(v * 1000) / 10;

interface Tenue {
  id_mutation: string;
  insee: string;
  lat: number | null;
  lon: number | null;
  type_bien: TypeBien;
  surface_logements: number;
  valeur_fonciere: string;
}

/** Measures the estimate on the held-out vintage; writes nothing. */
export async function mesurer(db: Queryable, dataset: Dataset, now: Date): Promise<Backtest> {
  const limites: string[] = [];
  const { rows: m } = await db.query<{ dernier: number | null; premier: number | null; communes: number }>(
    `SELECT max(millesime)::int AS dernier, min(millesime)::int AS premier, count(DISTINCT insee)::int AS communes
       FROM dvf_mutations WHERE dataset = $1`,
    [dataset],
  );
  const { dernier, premier, communes } = m[0];
  const vide: Backtest = {
    millesime_teste: null,
    mesure_le: now.toISOString(),
    perimetre: '',
    estimees: 0,
    non_estimees: 0,
    groupes: [],
    ensemble: null,
    limites,
  };
  if (dernier === null || premier === null || premier === dernier) {
    limites.push(
      'Un seul millésime DVF (ou aucun) : pas de ventes plus anciennes pour estimer le dernier, rien n’est mesuré.',
    );
    return vide;
  }
  const perimetre = `${communes} commune${communes > 1 ? 's' : ''}, millésimes ${premier}-${dernier - 1} pour estimer ${dernier}`;
  const { rows: tenues } = await db.query<Tenue>(
    `SELECT m.id_mutation, m.insee, m.lat, m.lon, m.surface_logements, m.valeur_fonciere,
            CASE WHEN m.types_locaux @> ARRAY['maison']::text[] THEN 'maison' ELSE 'appartement' END AS type_bien
       FROM dvf_mutations m
      WHERE m.dataset = $1 AND m.millesime = $2 AND ${VENTE_SIMPLE}
        AND (m.types_locaux @> ARRAY['maison']::text[] OR m.types_locaux @> ARRAY['appartement']::text[])
      ORDER BY m.id_mutation`,
    [dataset, dernier],
  );
  const pas = Math.max(1, Math.ceil(tenues.length / ECHANTILLON_MAX));
  const echantillon = tenues.filter((_, i) => i % pas === 0);
  if (pas > 1) {
    limites.push(
      `${tenues.length} ventes tenues hors échantillon ; une sur ${pas} est estimée (${echantillon.length}).`,
    );
  }
  // Estimated a few at a time (each is a handful of indexed reads), kept in the sample's order: the halves by rank
  // are the same whatever the timing.
  const bases: Array<Awaited<ReturnType<typeof valeurBrute>>> = new Array(echantillon.length);
  let suivante = 0;
  const estimer = async () => {
    while (suivante < echantillon.length) {
      const i = suivante++;
      const v = echantillon[i];
      bases[i] = await valeurBrute(
        db,
        dataset,
        { insee: v.insee, lat: v.lat, lon: v.lon },
        v.type_bien,
        v.surface_logements,
        { avant: `${dernier}-01-01` },
      );
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCE }, estimer));
  const erreurs = new Map<string, { type: TypeBien; socle: Socle; e: number[] }>();
  let non = 0;
  for (const [i, v] of echantillon.entries()) {
    const b = bases[i];
    if (!b) {
      non++;
      continue;
    }
    const prix = Number(v.valeur_fonciere);
    const cle = `${v.type_bien}|${b.socle}`;
    const g = erreurs.get(cle) ?? { type: v.type_bien, socle: b.socle, e: [] };
    g.e.push((b.prix_m2_socle * v.surface_logements) / prix - 1);
    erreurs.set(cle, g);
  }
  const groupes: MesureGroupe[] = [];
  let controles = 0;
  let couverts = 0;
  for (const g of erreurs.values()) {
    const abs = g.e.map(Math.abs);
    const calibration = abs.filter((_, i) => i % 2 === 0).sort((a, b) => a - b);
    const controle = abs.filter((_, i) => i % 2 === 1);
    const assez = calibration.length >= GROUPE_MIN && controle.length >= GROUPE_MIN;
    const h = assez ? quantile(calibration, COUVERTURE_NOMINALE) : null;
    if (h !== null) {
      controles += controle.length;
      couverts += controle.filter((a) => a <= h).length;
    }
    groupes.push({
      type_bien: g.type,
      socle: g.socle,
      n: abs.length,
      erreur_absolue_mediane_pct: pct(mediane(abs)!),
      part_10_pct: pct(abs.filter((a) => a <= 0.1).length / abs.length),
      part_20_pct: pct(abs.filter((a) => a <= 0.2).length / abs.length),
      demi_largeur_80_pct: h === null ? null : pct(h),
      couverture_pct: h === null ? null : pct(controle.filter((a) => a <= h).length / controle.length),
      n_calibration: calibration.length,
      n_controle: controle.length,
    });
    if (!assez) {
      limites.push(
        `${g.type} / ${g.socle} : ${abs.length} ventes estimées, moins de ${GROUPE_MIN} par moitié : ni demi-largeur calibrée ni couverture mesurée.`,
      );
    }
  }
  if (non > 0) limites.push(`${non} ventes tenues n’ont pu être estimées (trop peu de ventes antérieures).`);
  groupes.sort((a, b) => (a.type_bien + a.socle < b.type_bien + b.socle ? -1 : 1));
  return {
    millesime_teste: dernier,
    mesure_le: now.toISOString(),
    perimetre,
    estimees: echantillon.length - non,
    non_estimees: non,
    groupes,
    ensemble: controles > 0 ? { couverture_pct: pct(couverts / controles), n_controle: controles } : null,
    limites,
  };
}

const MESURES = [
  ['erreur_absolue_mediane', 'Erreur absolue médiane', 'erreur_absolue_mediane_pct', 'n'],
  ['part_10', 'Part des prix à ±10 % de l’estimation', 'part_10_pct', 'n'],
  ['part_20', 'Part des prix à ±20 % de l’estimation', 'part_20_pct', 'n'],
  [
    'demi_largeur_80',
    'Demi-largeur couvrant 80 % des prix (moitié de calibration)',
    'demi_largeur_80_pct',
    'n_calibration',
  ],
  [
    'couverture_80',
    'Couverture observée de [bas, haut] (moitié de contrôle, nominal 80 %)',
    'couverture_pct',
    'n_controle',
  ],
] as const;

/** A measure of a sheet, as modeles_mesures keeps it (type_bien and socle '' when the measure is not split). */
export interface Mesure {
  indicateur: string;
  type_bien?: string;
  socle?: string;
  libelle: string;
  valeur: number;
  unite: string;
  echantillon: number | null;
  perimetre: string;
  hors_echantillon: boolean;
}

/**
 * Replaces a sheet's measures and limits in one transaction: a reader sees the last backtest whole. A model that
 * measured nothing keeps no figure of an earlier run: its limits say why.
 */
export async function ecrireFiche(
  db: Db,
  dataset: Dataset,
  modele: string,
  mesureLe: string,
  mesures: Mesure[],
  limites: string[],
): Promise<void> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query(`DELETE FROM modeles_mesures WHERE dataset = $1 AND modele = $2`, [dataset, modele]);
    for (const m of mesures) {
      await client.query(
        `INSERT INTO modeles_mesures (dataset, modele, indicateur, type_bien, socle, libelle, valeur, unite, mesure_le,
                                      echantillon, perimetre, hors_echantillon)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [
          dataset,
          modele,
          m.indicateur,
          m.type_bien ?? '',
          m.socle ?? '',
          m.libelle,
          m.valeur,
          m.unite,
          mesureLe,
          m.echantillon,
          m.perimetre,
          m.hors_echantillon,
        ],
      );
    }
    await client.query(`DELETE FROM modeles_limites WHERE dataset = $1 AND modele = $2`, [dataset, modele]);
    for (const [i, texte] of limites.entries()) {
      await client.query(
        `INSERT INTO modeles_limites (dataset, modele, rang, texte, mesure_le) VALUES ($1, $2, $3, $4, $5)`,
        [dataset, modele, i, texte, mesureLe],
      );
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Rebuilds the index, runs the backtest and replaces the `estimation` sheet's measures of the dataset. */
export async function backtestEstimation(db: Db, dataset: Dataset, now: Date): Promise<Backtest> {
  await reconstruireIndices(db, dataset);
  const b = await mesurer(db, dataset, now);
  const mesures: Mesure[] = [];
  for (const g of b.groupes) {
    for (const [indicateur, libelle, champ, n] of MESURES) {
      const valeur = g[champ];
      if (valeur === null) continue;
      mesures.push({
        indicateur,
        type_bien: g.type_bien,
        socle: g.socle,
        libelle,
        valeur,
        unite: 'pct',
        echantillon: g[n],
        perimetre: b.perimetre,
        hors_echantillon: true,
      });
    }
  }
  if (b.ensemble) {
    mesures.push({
      indicateur: 'couverture_80',
      libelle:
        'Couverture observée de [bas, haut], toutes ventes tenues des groupes calibrés (moitié de contrôle, nominal 80 %)',
      valeur: b.ensemble.couverture_pct,
      unite: 'pct',
      echantillon: b.ensemble.n_controle,
      perimetre: `toutes ventes ; ${b.perimetre}`,
      hors_echantillon: true,
    });
  }
  await ecrireFiche(db, dataset, 'estimation', b.mesure_le, mesures, b.limites);
  return b;
}

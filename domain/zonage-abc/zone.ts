import type { Queryable } from '../../db/client.ts';
import { communeByCode } from '../communes.ts';
import type { Dataset } from '../platform/sandbox.ts';

/**
 * The A/B/C housing zoning (ministry of housing): each commune's zone, from the tightest market (Abis) to the loosest
 * (C), which sets rent caps, investment tax schemes and loan conditions. Imported by `import.ts` into `zonage_abc`,
 * one edition per date it applies from; read here by the Communes market.
 */

export const ZONES_ABC = ['Abis', 'A', 'B1', 'B2', 'C'] as const;
export type ZoneAbc = (typeof ZONES_ABC)[number];

const PAR_ECRITURE = new Map<string, ZoneAbc>(ZONES_ABC.map((z) => [z.toUpperCase(), z]));

/**
 * A zone as files write it, or null: case, accents, spaces, dots, dashes and underscores ignored, and a leading "zone"
 * (`A bis`, `ABIS`, `A-bis`, `b1`, `Zone B2`); any other character makes it unknown (`A+`).
 */
export function zoneAbcDe(valeur: string): ZoneAbc | null {
  const v = valeur
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toUpperCase()
    .replace(/[\s._-]/g, '')
    .replace(/^ZONE(?=.)/, '');
  return PAR_ECRITURE.get(v) ?? null;
}

/** A commune's zone, as the domains read it. */
export interface ZoneAbcCommune {
  /** The commune asked for. */
  insee: string;
  /** The commune the zoning lists: the one asked for, or for a municipal arrondissement its commune (75111 → 75056). */
  insee_zonage: string;
  /** Its name as the file writes it (LIBGEO). */
  commune: string | null;
  zone: ZoneAbc;
  /** The date the edition applies from (AAAA-MM-JJ). */
  en_vigueur_le: string;
  /** Whether the commune changed zone with this edition (the file's "Reclassement" column); null when not said. */
  reclassement: boolean | null;
}

/**
 * The zone of `insee` in the latest edition that lists it, or null. The zoning lists communes, not the municipal
 * arrondissements of Paris, Lyon and Marseille: an arrondissement reads its commune's zone (its own, should an
 * edition ever list it). One indexed read.
 */
export async function zoneAbc(db: Queryable, dataset: Dataset, insee: string): Promise<ZoneAbcCommune | null> {
  const parente = communeByCode(insee)?.communeParente;
  const { rows } = await db.query<Omit<ZoneAbcCommune, 'insee'>>(
    `SELECT insee AS insee_zonage, commune, zone, to_char(en_vigueur_le, 'YYYY-MM-DD') AS en_vigueur_le, reclassement
       FROM zonage_abc
      WHERE dataset = $1 AND insee = ANY ($2::text[])
      ORDER BY en_vigueur_le DESC, insee = $3 DESC
      LIMIT 1`,
    [dataset, parente ? [insee, parente] : [insee], insee],
  );
  return rows[0] ? { insee, ...rows[0] } : null;
}

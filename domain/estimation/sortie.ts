import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { departementOf } from '../communes.ts';

/**
 * The exit cost of an E, F or G dwelling to D, C or B, from the regulatory energy audits (dpe_audits): the cost of
 * the works of audits that start from the same class and reach at least the target, with their audited DPE's surface
 * when it is known. The perimeter widens from the commune to the département to the whole base until an audit is
 * found, and `niveau` says which.
 */

const Quantiles = z.object({ mediane: z.number(), p25: z.number(), p75: z.number() });

export const SortieSchema = z.object({
  classe_depart: z.enum(['E', 'F', 'G']),
  cibles: z.array(
    z.object({
      vers: z.enum(['D', 'C', 'B']),
      n_audits: z.number().int(),
      euros: Quantiles,
      eur_m2: Quantiles.nullable(),
      surface_mediane_m2: z.number().nullable(),
      pour_la_surface: z
        .object({ surface_m2: z.number(), mediane: z.number(), p25: z.number(), p75: z.number() })
        .nullable(),
      part_au_dela: z.number().min(0).max(1).nullable(),
      perimetre: z.string(),
      niveau: z.enum(['complet', 'sans_periode', 'sans_zone', 'national']),
    }),
  ),
  lecture: z.string(),
  source: z.string(),
  erreur: z.string().nullable(),
});
export type SortieDpe = z.infer<typeof SortieSchema>;

/** Fewer audits than this at a perimeter, and the next, wider one is read. */
const AUDITS_MIN = 5;
const CIBLES = ['D', 'C', 'B'] as const;

interface Ligne {
  cout: number;
  surface: number | null;
}

function quantile(sorted: number[], q: number): number {
  const i = (sorted.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
}

const q3 = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return {
    mediane: Math.round(quantile(s, 0.5)),
    p25: Math.round(quantile(s, 0.25)),
    p75: Math.round(quantile(s, 0.75)),
  };
};

/** `avant` (AAAA-MM-JJ): only the audits established before, as the backtest of the `travaux` sheet reads them. */
export async function sortieDpe(
  db: Queryable,
  dataset: Dataset,
  classe: 'E' | 'F' | 'G',
  insee: string,
  surface: number,
  options: { avant?: string } = {},
): Promise<SortieDpe> {
  const perimetres: Array<{ motif: string | null; libelle: string; niveau: 'complet' | 'sans_zone' | 'national' }> = [
    { motif: `${insee}\\_%`, libelle: `commune ${insee}`, niveau: 'complet' },
    { motif: `${departementOf(insee)}%`, libelle: `département ${departementOf(insee)}`, niveau: 'sans_zone' },
    { motif: null, libelle: 'national', niveau: 'national' },
  ];
  const cibles: SortieDpe['cibles'] = [];
  for (const vers of CIBLES) {
    for (const p of perimetres) {
      const { rows } = await db.query<Ligne>(
        `SELECT a.cout_travaux_max::float8 AS cout, d.surface_m2 AS surface
           FROM dpe_audits a LEFT JOIN dpe d ON d.dataset = a.dataset AND d.numero_dpe = a.numero_dpe
          WHERE a.dataset = $1 AND a.classe_initiale = $2 AND a.classe_visee <= $3 AND a.cout_travaux_max > 0
            AND ($4::text IS NULL OR a.cle_ban LIKE $4) AND ($5::date IS NULL OR a.etabli_le < $5)
            AND NOT EXISTS (SELECT 1 FROM dpe_audits r WHERE r.dataset = a.dataset AND r.numero_audit_remplace = a.numero_audit
                              AND ($5::date IS NULL OR r.etabli_le < $5))`,
        [dataset, classe, vers, p.motif, options.avant ?? null],
      );
      if (rows.length < (p.niveau === 'national' ? 1 : AUDITS_MIN)) continue;
      const couts = rows.map((r) => r.cout);
      const parM2 = rows.filter((r) => r.surface && r.surface > 0).map((r) => r.cout / r.surface!);
      const surfaces = rows.filter((r) => r.surface && r.surface > 0).map((r) => r.surface!);
      const eurM2 = parM2.length ? q3(parM2) : null;
      cibles.push({
        vers,
        n_audits: rows.length,
        euros: q3(couts),
        eur_m2: eurM2,
        surface_mediane_m2: surfaces.length ? q3(surfaces).mediane : null,
        pour_la_surface: eurM2
          ? {
              surface_m2: surface,
              mediane: eurM2.mediane * surface,
              p25: eurM2.p25 * surface,
              p75: eurM2.p75 * surface,
            }
          : null,
        part_au_dela: null,
        perimetre: p.libelle,
        niveau: p.niveau,
      });
      break;
    }
  }
  return {
    classe_depart: classe,
    cibles,
    lecture:
      cibles.length > 0
        ? `Coût des travaux des audits énergétiques réglementaires partant de la classe ${classe} et atteignant au moins la cible (scénario le plus complet de l’audit).`
        : `Aucun audit énergétique partant de la classe ${classe} dans la base.`,
    source: 'Audits énergétiques réglementaires (ADEME)',
    erreur: null,
  };
}

import type { Db, Queryable } from '../../db/client.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { ecrireFiche, type Mesure } from './backtest.ts';
import { sortieDpe, type SortieDpe } from './sortie.ts';
import { mediane } from './valeur.ts';

/**
 * The backtest of the `travaux` sheet: the exit costs estimer_bien serves (dpe.sortie, domain/estimation/sortie.ts)
 * against audits they never saw.
 *
 * Method. The audits of the last TENUE_MOIS months of the base are held out; each one that starts from E, F or G and
 * reaches D or better is, for every target it reaches (D, C, B), priced by sortieDpe from the earlier audits alone,
 * with the same widening from the commune to the département to the whole base, for its commune and surface. Errors:
 * the median in euros against the audit's cost, the per-m² median times its surface against the same cost, and the
 * share of costs inside the served [p25, p75] (nominal 50 %).
 */

/** Months of audits held out, counted back from the latest one. */
export const TENUE_MOIS = 6;
/** Held-out audits priced at most: taken evenly by number. */
export const AUDITS_MAX = 400;
/** Held-out audits a target needs before its measures are published. */
export const CIBLE_MIN = 10;

const CIBLES = ['D', 'C', 'B'] as const;
const pct = (v: number) => Math.round(v * 1000) / 10;

interface Tenu {
  numero_audit: string;
  classe_initiale: 'E' | 'F' | 'G';
  classe_visee: string;
  cout: number;
  insee: string | null;
  surface: number | null;
}

export interface BacktestTravaux {
  mesure_le: string;
  perimetre: string;
  mesures: Mesure[];
  limites: string[];
}

function moisAvant(iso: string, mois: number): string {
  const d = new Date(`${iso}T00:00:00Z`);
  d.setUTCMonth(d.getUTCMonth() - mois);
  return d.toISOString().slice(0, 10);
}

/** Measures the exit costs on the held-out audits; writes nothing. */
export async function mesurerTravaux(db: Queryable, dataset: Dataset, now: Date): Promise<BacktestTravaux> {
  const mesure_le = now.toISOString();
  const limites: string[] = [];
  const { rows: bornes } = await db.query<{ premier: string | null; dernier: string | null }>(
    `SELECT to_char(min(etabli_le), 'YYYY-MM-DD') AS premier, to_char(max(etabli_le), 'YYYY-MM-DD') AS dernier
       FROM dpe_audits WHERE dataset = $1`,
    [dataset],
  );
  const { premier, dernier } = bornes[0];
  if (!premier || !dernier) {
    limites.push('Aucun audit énergétique importé : l’erreur des coûts de sortie n’est pas mesurée.');
    return { mesure_le, perimetre: '', mesures: [], limites };
  }
  const coupure = moisAvant(dernier, TENUE_MOIS);
  const perimetre = `audits établis du ${premier} au ${coupure} pour estimer ceux du ${coupure} au ${dernier}`;
  const { rows: tenus } = await db.query<Tenu>(
    `SELECT a.numero_audit, a.classe_initiale, a.classe_visee, a.cout_travaux_max::float8 AS cout,
            coalesce(nullif(split_part(a.cle_ban, '_', 1), ''), d.insee) AS insee, d.surface_m2 AS surface
       FROM dpe_audits a LEFT JOIN dpe d ON d.dataset = a.dataset AND d.numero_dpe = a.numero_dpe
      WHERE a.dataset = $1 AND a.etabli_le >= $2 AND a.classe_initiale IN ('E', 'F', 'G')
        AND a.classe_visee <= 'D' AND a.cout_travaux_max > 0
        AND NOT EXISTS (SELECT 1 FROM dpe_audits r WHERE r.dataset = a.dataset AND r.numero_audit_remplace = a.numero_audit)
      ORDER BY a.numero_audit`,
    [dataset, coupure],
  );
  const pas = Math.max(1, Math.ceil(tenus.length / AUDITS_MAX));
  const echantillon = tenus.filter((_, i) => i % pas === 0);
  if (pas > 1) limites.push(`${tenus.length} audits tenus ; un sur ${pas} est estimé (${echantillon.length}).`);
  // The same (class, commune) is priced once: sortieDpe reads every audit of a perimeter.
  const memo = new Map<string, Promise<SortieDpe>>();
  const erreurs = new Map<string, { euros: number[]; surface: number[]; dansIqr: number; n: number }>();
  let sansCommune = 0;
  let sansPrix = 0;
  for (const a of echantillon) {
    if (!a.insee) {
      sansCommune++;
      continue;
    }
    const cle = `${a.classe_initiale}|${a.insee}`;
    let s = memo.get(cle);
    if (!s) {
      s = sortieDpe(db, dataset, a.classe_initiale, a.insee, a.surface ?? 0, { avant: coupure });
      memo.set(cle, s);
    }
    const sortie = await s;
    for (const vers of CIBLES.filter((v) => a.classe_visee <= v)) {
      const c = sortie.cibles.find((x) => x.vers === vers);
      if (!c) {
        sansPrix++;
        continue;
      }
      const g = erreurs.get(vers) ?? { euros: [], surface: [], dansIqr: 0, n: 0 };
      g.n++;
      g.euros.push(Math.abs(c.euros.mediane / a.cout - 1));
      if (c.eur_m2 && a.surface && a.surface > 0) g.surface.push(Math.abs((c.eur_m2.mediane * a.surface) / a.cout - 1));
      if (a.cout >= c.euros.p25 && a.cout <= c.euros.p75) g.dansIqr++;
      erreurs.set(vers, g);
    }
  }
  const mesures: Mesure[] = [];
  for (const vers of CIBLES) {
    const g = erreurs.get(vers);
    if (!g || g.n < CIBLE_MIN) {
      limites.push(
        `Sortie vers ${vers} : ${g?.n ?? 0} audits tenus estimés, moins de ${CIBLE_MIN} : erreur non mesurée.`,
      );
      continue;
    }
    const commun = { socle: vers, unite: 'pct', perimetre: `cible ${vers} ; ${perimetre}`, hors_echantillon: true };
    mesures.push(
      {
        ...commun,
        indicateur: 'erreur_absolue_mediane',
        libelle: `Erreur absolue médiane du coût médian servi (euros), sortie vers ${vers}`,
        valeur: pct(mediane(g.euros)!),
        echantillon: g.euros.length,
      },
      {
        ...commun,
        indicateur: 'couverture_p25_p75',
        libelle: `Part des coûts tenus dans [p25, p75] servi (nominal 50 %), sortie vers ${vers}`,
        valeur: pct(g.dansIqr / g.n),
        echantillon: g.n,
      },
    );
    if (g.surface.length >= CIBLE_MIN) {
      mesures.push({
        ...commun,
        indicateur: 'erreur_absolue_mediane_surface',
        libelle: `Erreur absolue médiane du coût au m² servi × surface, sortie vers ${vers}`,
        valeur: pct(mediane(g.surface)!),
        echantillon: g.surface.length,
      });
    } else {
      limites.push(
        `Sortie vers ${vers} : ${g.surface.length} audits tenus de surface connue, moins de ${CIBLE_MIN} : erreur du coût pour la surface non mesurée.`,
      );
    }
  }
  if (tenus.length === 0) {
    limites.push(`Aucun audit des ${TENUE_MOIS} derniers mois partant de E, F ou G et atteignant D : rien à tenir.`);
  }
  if (sansCommune > 0)
    limites.push(`${sansCommune} audits tenus sans commune connue (ni adresse ni DPE) : non estimés.`);
  if (sansPrix > 0) limites.push(`${sansPrix} couples (audit, cible) sans audit antérieur pour les estimer.`);
  return { mesure_le, perimetre, mesures, limites };
}

export async function backtestTravaux(db: Db, dataset: Dataset, now: Date): Promise<BacktestTravaux> {
  const b = await mesurerTravaux(db, dataset, now);
  await ecrireFiche(db, dataset, 'travaux', b.mesure_le, b.mesures, b.limites);
  return b;
}

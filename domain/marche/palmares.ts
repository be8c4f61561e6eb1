import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { defineOperation } from '../catalogue.ts';
import { absenceSource } from '../couverture.ts';
import { communeByCode } from '../communes.ts';
import { invalidField } from '../errors.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedFromDataset } from '../qualite.ts';
import {
  CREDIT,
  DEFINITIONS,
  INDICATEURS,
  METHODE_CASHFLOW,
  METHODE_RESIDUEL,
  MIN_COMMUNES_MODELE,
  type LigneIndicateurs,
  type ModelePrix,
} from './derives.ts';
import { METHODE_RENDEMENT, METHODE_SCORE } from './indicateurs.ts';
import { SOURCE_DVF } from './prix.ts';
import { departement as departementNomme, region as regionNommee } from './territoires.ts';

/** palmares_communes: communes ranked by one of ten indicators, read from `marche_classement` in ranking order. */

const nul = <T extends z.ZodType>(t: T) => t.nullable();
const SOURCES = `${SOURCE_DVF} ; carte des loyers (DHUP) ; DPE (ADEME) ; zonage A/B/C ; découpage administratif (Insee)`;

/** The sales of the latest 3 years below which a commune is not ranked on a price-based indicator, unless asked. */
export const TRANSACTIONS_MIN_DEFAUT = 5;

/** The indicators of a commune, as palmares_communes and comparer_communes serve them. */
export const IndicateursCommuneSchema = z.object({
  insee: z.string(),
  commune: z.string().nullable(),
  code_postal: z.string().nullable(),
  departement: z.string(),
  region: z.string().nullable(),
  population: nul(z.number().int()),
  transactions: z
    .number()
    .int()
    .describe('Ventes d’un logement au prix lisible sur les 3 dernières années de ventes de la commune.'),
  prix_m2_appartement: nul(z.number()),
  prix_m2_maison: nul(z.number()),
  loyer_m2_predit: nul(z.number()).describe('Loyer d’annonce prédit des appartements (à défaut maisons), €/m²/mois.'),
  rendement_brut_appartement_pct: nul(z.number()),
  rendement_brut_maison_pct: nul(z.number()),
  prix_residuel_pct: nul(z.number()).describe('Écart au prix attendu (négatif : sous-évaluée).'),
  evolution_3_ans_pct: nul(z.number()),
  passoires_dpe_fg_pct: nul(z.number()),
  zone_abc: z.string().nullable(),
  score_attractivite: nul(z.number()),
});
export type IndicateursCommune = z.infer<typeof IndicateursCommuneSchema>;

export function sortieIndicateurs(l: LigneIndicateurs): IndicateursCommune {
  return {
    insee: l.insee,
    commune: l.commune,
    code_postal: l.code_postal,
    departement: l.departement,
    region: l.region,
    population: l.population,
    transactions: l.transactions,
    prix_m2_appartement: l.prix_m2_appartement,
    prix_m2_maison: l.prix_m2_maison,
    loyer_m2_predit: l.loyer_m2_predit,
    rendement_brut_appartement_pct: l.rendement_brut_appartement_pct,
    rendement_brut_maison_pct: l.rendement_brut_maison_pct,
    prix_residuel_pct: l.prix_residuel_pct,
    evolution_3_ans_pct: l.evolution_3_ans_pct,
    passoires_dpe_fg_pct: l.passoires_dpe_fg_pct,
    zone_abc: l.zone_abc,
    score_attractivite: l.score_attractivite,
  };
}

/** The row of a commune the administrative split knows but no data has: every indicator null. */
export function ligneVide(insee: string): LigneIndicateurs | null {
  const c = communeByCode(insee);
  if (!c) return null;
  return {
    insee,
    commune: c.nom,
    code_postal: c.codesPostaux[0] ?? null,
    departement: c.departement,
    region: c.region,
    population: c.population,
    transactions: 0,
    prix_m2_appartement: null,
    prix_m2_maison: null,
    prix_m2_logement: null,
    loyer_m2_appartement: null,
    loyer_m2_maison: null,
    loyer_m2_predit: null,
    rendement_brut_appartement_pct: null,
    rendement_brut_maison_pct: null,
    cashflow_m2_mois: null,
    prix_residuel_pct: null,
    evolution_3_ans_pct: null,
    passoires_dpe_fg_pct: null,
    dpe_n: 0,
    zone_abc: null,
    score_attractivite: null,
  };
}

/** What the rebuild measured: the expected-price model and the date of the data. */
export async function lireDerives(db: Queryable, dataset: Dataset) {
  const { rows } = await db.query<{ modele_prix: ModelePrix[]; donnees_du: string | null }>(
    `SELECT modele_prix, to_char(donnees_du, 'YYYY-MM-DD') AS donnees_du FROM marche_derives WHERE dataset = $1`,
    [dataset],
  );
  return rows[0] ?? { modele_prix: [], donnees_du: null };
}

/** The expected-price model as measured, in words. */
export function decrireModele(modeles: ModelePrix[]): string {
  if (modeles.length === 0) return 'modèle non encore ajusté (aucune reconstruction)';
  return modeles
    .map((m) =>
      m.coefficients
        ? `${m.type}s : ln(prix) = ${m.coefficients.constante.toFixed(3)} + ${m.coefficients.ln_loyer.toFixed(3)} ln(loyer) + ${m.coefficients.ln_population.toFixed(3)} ln(population), R² ${m.r2}, ${m.n} communes`
        : `${m.type}s : pas de modèle (${m.n} communes mesurées, ${MIN_COMMUNES_MODELE} au moins)`,
    )
    .join(' ; ');
}

export const METHODE_INDICATEURS = `${METHODE_RENDEMENT}. ${METHODE_CASHFLOW}. ${METHODE_RESIDUEL}. ${METHODE_SCORE}`;

const DonneePalmares = IndicateursCommuneSchema.extend({
  rang: z.number().int(),
  valeur_indicateur: z.number(),
});

const PalmaresOutput = z.object({
  indicateur: z.enum(INDICATEURS),
  libelle: z.string(),
  methode: z.string(),
  maille: z.object({
    niveau: z.enum(['france', 'departement', 'region']),
    code: z.string().nullable(),
    nom: z.string().nullable(),
  }),
  filtres_appliques: z.array(z.string()),
  donnees: z.array(DonneePalmares),
  limites: z.array(z.string()).describe('Pourquoi aucune commune n’est classée, quand `donnees` est vide au début.'),
  qualite: QualiteSchema,
  donnees_du: z.string().nullable(),
  curseur_suivant: z.string().nullable(),
});

const Departement = z
  .string()
  .trim()
  .toUpperCase()
  .regex(/^(?:0[1-9]|[1-8]\d|9[0-5]|2A|2B|97[1-6])$/, 'Département : 01-95, 2A, 2B, 971-976.')
  .describe('Code du département (01-95, 2A, 2B, 971-976).');

const DESCRIPTION = `Communes classées selon un indicateur, en France entière, dans un département ou une région. Lu sur une table de classement recalculée après chaque import DVF, DPE, loyers, zonage A/B/C ou IRIS : une page est la lecture d'un index dans l'ordre du classement, jamais un calcul sur les ventes.

**Indicateurs** (\`indicateur\`, \`valeur_indicateur\` dans l'unité dite) :
${INDICATEURS.map((i) => `- \`${i}\` : ${DEFINITIONS[i].libelle.toLowerCase()} ; ${DEFINITIONS[i].methode}${DEFINITIONS[i].condition ? ` ; condition : ${DEFINITIONS[i].condition!.libelle}` : ''}.`).join('\n')}

**Méthodes.** Prix : barème de prix_commune, dernier millésime (mesure, ou estime par rétrécissement vers les communes voisines). ${METHODE_RENDEMENT}. ${METHODE_CASHFLOW} (hypothèse de crédit : ${CREDIT.annees} ans, ${CREDIT.taux * 100} %, frais ${CREDIT.frais * 100} %, charges ${CREDIT.charges * 100} % du loyer). ${METHODE_RESIDUEL} ; \`methode\` cite le modèle ajusté à la dernière reconstruction. ${METHODE_SCORE} \`transactions\` : ventes d'un logement au prix lisible sur les 3 dernières années de ventes de la commune (la dernière, souvent partielle, et les deux précédentes).

**Filtres.** \`departement\` ou \`region\` (code INSEE, nom ou nom court : IDF, PACA, ARA…) restreignent la maille (les deux ensemble : 400). \`population_min\` (population légale du découpage administratif ; une commune sans population est écartée dès que le filtre est donné) et \`transactions_min\`. Pour les indicateurs fondés sur les prix (tous sauf peu-de-passoires), \`transactions_min\` vaut ${TRANSACTIONS_MIN_DEFAUT} quand il n'est pas donné, pour qu'un prix sur une ou deux ventes ne tienne pas la tête du classement (\`transactions_min=0\` le lève). \`filtres_appliques\` liste tous les seuils réellement appliqués, ceux donnés, ceux par défaut et la condition de l'indicateur. Une commune sans valeur pour l'indicateur n'est pas classée.

**Pages.** Ordre de l'indicateur, à égalité par code INSEE ; \`rang\` compte depuis le début du classement filtré ; \`curseur_suivant\` (lié à l'indicateur et aux filtres) donne la page suivante, null à la dernière. 1 crédit par commune servie ; une page vide ne coûte rien. Paris, Lyon et Marseille sont classées par arrondissement.`;

interface Position {
  cle: number;
  insee: string;
  rang: number;
}

export const palmaresCommunes = defineOperation({
  tool: 'palmares_communes',
  method: 'GET',
  path: '/communes/palmares',
  summary: 'Palmarès des communes selon un indicateur (rendement, prix, passoires, score…)',
  description: DESCRIPTION,
  credits: 1,
  unit: 'element',
  scope: 'territoire',
  tier: 'usage',
  sandbox: true,
  // A region named by a name or a short name is bounded by its code; a name no region answers is the handler's 400.
  territoires: (e: { departement?: string; region?: string }) => [
    ...(e.departement ? [{ departement: e.departement }] : []),
    ...(e.region && regionNommee(e.region) ? [{ region: regionNommee(e.region)!.code }] : []),
  ],
  cacheS: 6 * 3600,
  timeoutS: 6,
  errors: [],
  input: z.object({
    indicateur: z.enum(INDICATEURS).describe('L’indicateur du classement.'),
    departement: Departement.optional(),
    region: z.string().trim().min(2).max(60).optional().describe('Région : code INSEE, nom ou nom court.'),
    population_min: z.coerce.number().int().min(0).max(1e8).optional().describe('Population minimale.'),
    transactions_min: z.coerce
      .number()
      .int()
      .min(0)
      .max(1e7)
      .optional()
      .describe(`Ventes minimales sur 3 ans (défaut ${TRANSACTIONS_MIN_DEFAUT} sur les prix).`),
    limite: z.coerce.number().int().min(1).max(50).default(20).describe('Communes par page (1-50).'),
    curseur: z.string().min(1).max(1024).optional().describe('curseur_suivant de la page précédente.'),
  }),
  output: PalmaresOutput,
  units: (o) => o.donnees.length,
  dataDate: (o) => o.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    if (e.departement && e.region) {
      throw invalidField('region', 'Donner un département ou une région, pas les deux.', 'requete');
    }
    const definition = DEFINITIONS[e.indicateur];
    let maille: z.infer<typeof PalmaresOutput>['maille'] = { niveau: 'france', code: null, nom: null };
    if (e.departement) {
      maille = { niveau: 'departement', code: e.departement, nom: departementNomme(e.departement)?.nom ?? null };
    } else if (e.region) {
      const r = regionNommee(e.region);
      if (!r) throw invalidField('region', `Aucune région ne répond à « ${e.region} ».`, 'requete');
      maille = { niveau: 'region', code: r.code, nom: r.nom };
    }
    const transactionsMin = e.transactions_min ?? (definition.surPrix ? TRANSACTIONS_MIN_DEFAUT : null);
    const filtres: string[] = [];
    if (maille.niveau !== 'france') filtres.push(`${maille.niveau} = ${maille.code} (${maille.nom ?? '?'})`);
    if (e.population_min !== undefined) filtres.push(`population >= ${e.population_min}`);
    if (transactionsMin !== null) {
      filtres.push(
        `transactions >= ${transactionsMin}${e.transactions_min === undefined ? ' (seuil par défaut des indicateurs de prix)' : ''}`,
      );
    }
    if (definition.condition) filtres.push(definition.condition.libelle);
    const scope = `palmares:${e.indicateur}:${maille.niveau}:${maille.code ?? ''}:${e.population_min ?? ''}:${transactionsMin ?? ''}`;
    let apres: Position | null = null;
    if (e.curseur) {
      apres = ctx.services.cursors.decode<Position>(scope, e.curseur);
      if (!apres)
        throw invalidField('curseur', 'Curseur invalide : altéré, ou émis pour une autre recherche.', 'requete');
    }
    const db = ctx.services.db;
    const params: unknown[] = [dataset, e.indicateur];
    const conditions: string[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    if (maille.niveau === 'departement') conditions.push(`k.departement = ${p(maille.code)}`);
    if (maille.niveau === 'region') conditions.push(`k.region = ${p(maille.code)}`);
    if (e.population_min !== undefined) conditions.push(`k.population >= ${p(e.population_min)}`);
    if (transactionsMin !== null) conditions.push(`k.transactions >= ${p(transactionsMin)}`);
    if (apres) conditions.push(`(k.cle, k.insee) > (${p(apres.cle)}::float8, ${p(apres.insee)}::text)`);
    const [{ rows }, derives] = await Promise.all([
      db.query<LigneIndicateurs & { cle: number; valeur: number }>(
        `SELECT k.cle, k.valeur, i.*
           FROM marche_classement k
           JOIN marche_indicateurs i ON i.dataset = k.dataset AND i.insee = k.insee
          WHERE k.dataset = $1 AND k.indicateur = $2 ${conditions.map((c) => `AND ${c}`).join(' ')}
          ORDER BY k.cle, k.insee
          LIMIT ${p(e.limite + 1)}`,
        params,
      ),
      lireDerives(db, dataset),
    ]);
    const page = rows.slice(0, e.limite);
    const debut = apres?.rang ?? 0;
    const donnees = page.map((r, k) => ({
      rang: debut + k + 1,
      ...sortieIndicateurs(r),
      valeur_indicateur: r.valeur,
    }));
    const dernier = page.at(-1);
    const modele =
      e.indicateur === 'sous-evaluees' || e.indicateur === 'sous-evaluees-et-rendement'
        ? ` Modèle ajusté : ${decrireModele(derives.modele_prix)}.`
        : '';
    const limites: string[] = [];
    if (donnees.length === 0 && !apres) {
      const horsDonnees =
        definition.surPrix && maille.niveau === 'departement'
          ? await absenceSource(db, dataset, 'dvf', maille.code!)
          : null;
      limites.push(
        horsDonnees ??
          `Aucune commune n’a cet indicateur avec ces filtres (${filtres.join(' ; ') || 'aucun'}) : les agrégats ne couvrent que les communes des données importées.`,
      );
    }
    const methode = `${definition.libelle} : ${definition.methode}.${definition.condition ? ` Condition : ${definition.condition.libelle}.` : ''} ${METHODE_INDICATEURS}.${modele}`;
    return {
      indicateur: e.indicateur,
      libelle: definition.libelle,
      methode,
      maille,
      filtres_appliques: filtres,
      donnees,
      limites,
      qualite: {
        n: donnees.length,
        provenance: donnees.length ? ('mesure' as const) : null,
        incertitude: null,
        drapeaux: [],
        methode: 'Classement lu sur les indicateurs précalculés de chaque commune (voir commune et prix_commune).',
        donnees_du: derives.donnees_du,
        source: SOURCES,
      },
      donnees_du: derives.donnees_du,
      curseur_suivant:
        rows.length > e.limite && dernier
          ? ctx.services.cursors.encode(scope, {
              cle: dernier.cle,
              insee: dernier.insee,
              rang: debut + page.length,
            } satisfies Position)
          : null,
    };
  }),
});

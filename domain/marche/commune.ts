import { z } from 'zod';
import { defineOperation } from '../catalogue.ts';
import { ApiError, invalidField } from '../errors.ts';
import { QualiteSchema, servedFromDataset, type Qualite } from '../qualite.ts';
import { ARRONDISSEMENTS, Insee } from './entrees.ts';
import { indicateurs, METHODE_RENDEMENT, METHODE_SCORE, raisonSansPrix, type Indicateurs } from './indicateurs.ts';
import { PRIOR_VENTES, SEUIL_MESURE, SOURCE_DVF } from './prix.ts';
import type { TypeLogement } from './agregats.ts';
import type { LigneIndicateurs } from './derives.ts';
import {
  decrireModele,
  IndicateursCommuneSchema,
  ligneVide,
  lireDerives,
  METHODE_INDICATEURS,
  sortieIndicateurs,
  type IndicateursCommune,
} from './palmares.ts';

/** The commune market sheet (`commune`) and the comparison of communes (`comparer_communes`). */

const nul = <T extends z.ZodType>(t: T) => t.nullable();
const SOURCES = `${SOURCE_DVF} ; carte des loyers (DHUP) ; DPE (ADEME) ; zonage A/B/C`;

const PrixReference = z
  .object({
    prix_m2: z.number().describe('Prix de référence (€/m²), dernier millésime du barème.'),
    provenance: z.enum(['mesure', 'estime']).nullable(),
    n_ventes: z.number().int().describe('Ventes de la commune, du type, sur ce millésime.'),
    millesime: z.number().int(),
    demi_bande_pct: nul(z.number()),
  })
  .nullable();

const Loyer = z
  .object({
    loyer_m2: z.number().describe('Loyer d’annonce prédit, €/m²/mois, charges comprises.'),
    bas_m2: z.number(),
    haut_m2: z.number(),
    edition: z.number().int(),
    nature: z.enum(['observe_commune', 'predit_maille']),
  })
  .nullable();

const CommuneOutput = z.object({
  insee: z.string(),
  commune: z.string().nullable(),
  departement: z.string(),
  region: z.string().nullable(),
  population: nul(z.number().int()),
  prix_m2: z.object({ appartement: PrixReference, maison: PrixReference }),
  loyer_m2: z.object({ appartement: Loyer, maison: Loyer }),
  rendement_brut_pct: z.object({ appartement: nul(z.number()), maison: nul(z.number()) }),
  tendance_3_ans: z.object({
    evolution_pct: nul(z.number()).describe('Variation de la médiane annuelle, toutes ventes d’un logement.'),
    sens: z.enum(['hausse', 'baisse', 'stable']).nullable(),
  }),
  transactions_annee_recente: z.number().int(),
  passoires_dpe_fg_pct: nul(z.number()),
  dpe_n: z.number().int().describe('DPE de la commune derrière la part F/G.'),
  zone_abc: z.string().nullable(),
  score_attractivite: nul(z.number()),
  limites: z.array(z.string()),
  donnees_du: z.string().nullable(),
  qualite: QualiteSchema,
});
type CommuneSortie = z.infer<typeof CommuneOutput>;

const prixDe = (i: Indicateurs, type: TypeLogement) => {
  const p = i.prix[type];
  return p && p.prix_m2 !== null
    ? {
        prix_m2: p.prix_m2,
        provenance: p.label,
        n_ventes: p.n_ventes,
        millesime: p.millesime,
        demi_bande_pct: p.demi_bande_pct,
      }
    : null;
};

const loyerDe = (i: Indicateurs, type: TypeLogement) => {
  const l = i.loyers[type];
  return l
    ? { loyer_m2: l.loyer_m2, bas_m2: l.bas_m2, haut_m2: l.haut_m2, edition: l.edition, nature: l.nature }
    : null;
};

/** The sheet of a commune; `sansPrix` says why it has no price (raisonSansPrix), null when it has one. */
function fiche(i: Indicateurs, sansPrix: string | null): CommuneSortie {
  const limites: string[] = [];
  if (sansPrix) limites.push(sansPrix);
  if (!i.loyers.appartement && !i.loyers.maison) limites.push('Pas d’indicateur de loyer pour cette commune.');
  if (!i.dpe) limites.push('Aucun DPE importé pour cette commune.');
  const n = (i.prix.appartement?.n_ventes ?? 0) + (i.prix.maison?.n_ventes ?? 0);
  const estime = [i.prix.appartement, i.prix.maison].some((p) => p?.label === 'estime');
  const qualite: Qualite = {
    n,
    provenance: n === 0 && !estime ? null : estime ? 'estime' : 'mesure',
    incertitude: null,
    drapeaux: n > 0 && n < 5 ? ['peu_d_observations'] : [],
    methode: `Prix : barème de prix_commune (dernier millésime ; mesure dès ${SEUIL_MESURE} ventes récentes, estime par rétrécissement vers les communes voisines sinon, poids local n / (n + ${PRIOR_VENTES})). ${METHODE_RENDEMENT}. ${METHODE_SCORE}`,
    donnees_du: i.donneesDu,
    source: SOURCES,
  };
  return {
    insee: i.insee,
    commune: i.commune?.nom ?? null,
    departement: i.commune?.departement ?? i.insee.slice(0, 2),
    region: i.commune?.region ?? null,
    population: i.commune?.population ?? null,
    prix_m2: { appartement: prixDe(i, 'appartement'), maison: prixDe(i, 'maison') },
    loyer_m2: { appartement: loyerDe(i, 'appartement'), maison: loyerDe(i, 'maison') },
    rendement_brut_pct: i.rendement,
    tendance_3_ans: { evolution_pct: i.evolution3Ans, sens: i.tendance },
    transactions_annee_recente: i.transactions,
    passoires_dpe_fg_pct: i.dpe?.passoires_pct ?? null,
    dpe_n: i.dpe?.n ?? 0,
    zone_abc: i.zone,
    score_attractivite: i.score,
    limites,
    donnees_du: i.donneesDu,
    qualite,
  };
}

const DESCRIPTION_COMMUNE = `Fiche marché d'une commune : prix de référence au m² des appartements et des maisons avec leur provenance et leur nombre de ventes, loyer d'annonce au m², rendements bruts, tendance sur 3 ans, part des DPE F et G, zone A/B/C, population. Chaque chiffre est lu sur un agrégat ou une table de référence (quelques lectures indexées), jamais sur les ventes brutes.

**Décisions** (la spécification laisse la forme ouverte).
- Outil \`commune\`, 2 crédits par appel, portée territoire, accès usage, bac à sable oui, mémoire 24 h, 4 s.
- \`prix_m2\` : le dernier millésime du barème de prix_commune pour chaque type ; \`provenance\` mesure (ventes de la commune) ou estime (rétrécissement vers les communes voisines quand la commune a moins de ${SEUIL_MESURE} ventes récentes) ; null sans vente dans la commune ni chez ses voisines.
- \`loyer_m2\` : indicateur de la carte des loyers (dernière édition ayant la commune), \`nature\` observe_commune ou predit_maille. ${METHODE_RENDEMENT}.
- \`tendance_3_ans\` : variation de la médiane annuelle (toutes ventes d'un logement) entre la dernière année de ventes et 3 ans plus tôt ; \`sens\` hausse/baisse au-delà de ±5 %, stable sinon.
- \`passoires_dpe_fg_pct\` : part des DPE F et G parmi les DPE de la commune (un DPE remplacé par un plus récent n'est pas compté), recalculée après chaque import DPE.
- \`zone_abc\` : zonage A/B/C en vigueur (un arrondissement lit celui de sa commune). ${METHODE_SCORE}
- Paris, Lyon, Marseille : par arrondissement (leur code de commune répond 400). Code inconnu : 404 \`commune_introuvable\`. Ce qui manque est dit dans \`limites\`.`;

export const communeMarche = defineOperation({
  tool: 'commune',
  method: 'GET',
  path: '/communes/{insee}',
  summary: 'Fiche marché d’une commune : prix, loyers, rendements, tendance, DPE, zone',
  description: DESCRIPTION_COMMUNE,
  credits: 2,
  unit: 'appel',
  scope: 'territoire',
  tier: 'usage',
  sandbox: true,
  territoires: (e: { insee: string }) => [{ commune: e.insee }],
  cacheS: 86_400,
  timeoutS: 4,
  errors: ['commune_introuvable'],
  input: z.object({ insee: Insee }),
  output: CommuneOutput,
  dataDate: (o) => o.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const arrondissements = ARRONDISSEMENTS[e.insee];
    if (arrondissements) {
      throw invalidField('insee', `Cette ville se lit par arrondissement municipal (${arrondissements}).`, 'chemin');
    }
    const i = await indicateurs(ctx.services.db, dataset, e.insee);
    if (!i) throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${e.insee} ; rien n’est débité.`);
    const sansPrix =
      i.prix.appartement || i.prix.maison ? null : await raisonSansPrix(ctx.services.db, dataset, e.insee);
    return fiche(i, sansPrix);
  }),
});

// -----------------------------------------------------------------------------------------------------------------
// Comparison.
// -----------------------------------------------------------------------------------------------------------------

type IndicateursSortie = IndicateursCommune;

const MEILLEURES = {
  prix_appartement_le_plus_bas: ['prix_m2_appartement', 'min'],
  prix_maison_le_plus_bas: ['prix_m2_maison', 'min'],
  rendement_appartement_le_plus_haut: ['rendement_brut_appartement_pct', 'max'],
  rendement_maison_le_plus_haut: ['rendement_brut_maison_pct', 'max'],
  evolution_3_ans_la_plus_haute: ['evolution_3_ans_pct', 'max'],
  score_svc_le_plus_haut: ['score_attractivite', 'max'],
  passoires_les_moins_nombreuses: ['passoires_dpe_fg_pct', 'min'],
} as const satisfies Record<string, [keyof IndicateursSortie, 'min' | 'max']>;

/** For each indicator, the INSEE code of the best commune having it (the first asked on a tie), or null. */
export function meilleures(communes: IndicateursSortie[]) {
  const out = {} as Record<keyof typeof MEILLEURES, string | null>;
  for (const [nom, [champ, sens]] of Object.entries(MEILLEURES) as Array<
    [keyof typeof MEILLEURES, (typeof MEILLEURES)[keyof typeof MEILLEURES]]
  >) {
    let best: IndicateursSortie | null = null;
    for (const c of communes) {
      const v = c[champ];
      if (v === null) continue;
      const b = best?.[champ] ?? null;
      if (b === null || (sens === 'min' ? v < b : v > b)) best = c;
    }
    out[nom] = best?.insee ?? null;
  }
  return out;
}

const ComparaisonOutput = z.object({
  communes: z.array(IndicateursCommuneSchema),
  meilleure_par_indicateur: z.object(
    Object.fromEntries(Object.keys(MEILLEURES).map((k) => [k, z.string().nullable()])) as Record<
      keyof typeof MEILLEURES,
      z.ZodNullable<z.ZodString>
    >,
  ),
  introuvables: z.array(z.string()).describe('Codes demandés qu’aucune commune n’a.'),
  limites: z.array(z.string()).describe('Pour chaque commune sans prix, sans loyer ou sans DPE : pourquoi.'),
  methode: z.string(),
  donnees_du: z.string().nullable(),
  qualite: QualiteSchema,
});

const DESCRIPTION_COMPARAISON = `Compare 2 à 10 communes sur les indicateurs de palmares_communes, et nomme la meilleure par indicateur.

**Décisions** (la spécification laisse chemin, outil et paramètres ouverts).
- \`GET /communes/comparaison?insee=<2 à 10 codes INSEE séparés par des virgules>\`, outil \`comparer_communes\`, **1 crédit par commune trouvée**, portée territoire, accès usage, bac à sable oui, mémoire 6 h, 6 s. Un code répété compte une fois.
- \`communes\` : dans l'ordre demandé, les indicateurs de palmares_communes pour chaque commune trouvée (sans rang ni valeur d'indicateur), lus sur la même table précalculée (une lecture indexée). \`loyer_m2_predit\` : celui des appartements, à défaut des maisons. Une commune du découpage administratif sans aucune donnée est trouvée, indicateurs null.
- \`introuvables\` : les codes qu'aucune commune n'a (ni au découpage administratif ni dans les agrégats), sans débit. Aucun code trouvé : 404 \`commune_introuvable\`.
- \`meilleure_par_indicateur\` : pour chaque indicateur, le code INSEE de la commune la meilleure parmi celles qui l'ont (prix le plus bas, rendement, évolution et score les plus hauts, part de passoires la plus faible ; à égalité, la première demandée), null si aucune ne l'a. \`score_svc_le_plus_haut\` lit \`score_attractivite\`. Paris, Lyon, Marseille : par arrondissement.

${METHODE_INDICATEURS}.`;

export const comparerCommunes = defineOperation({
  tool: 'comparer_communes',
  method: 'GET',
  path: '/communes/comparaison',
  summary: 'Comparer 2 à 10 communes et nommer la meilleure par indicateur',
  description: DESCRIPTION_COMPARAISON,
  credits: 1,
  unit: 'element',
  scope: 'territoire',
  tier: 'usage',
  sandbox: true,
  territoires: (e: { insee: string[] }) => e.insee.map((commune) => ({ commune })),
  cacheS: 6 * 3600,
  timeoutS: 6,
  errors: ['commune_introuvable'],
  input: z.object({
    insee: z
      .string()
      .transform((v) => [...new Set(v.split(',').map((c) => c.trim().toUpperCase()))].filter(Boolean))
      .pipe(
        z
          .array(z.string().regex(/^(?:\d{2}|2[AB])\d{3}$/, 'Code INSEE : 5 caractères (2A/2B en Corse).'))
          .min(2, 'Au moins 2 communes.')
          .max(10, 'Au plus 10 communes.'),
      )
      .describe('2 à 10 codes INSEE séparés par des virgules (33234,33001).'),
  }),
  output: ComparaisonOutput,
  units: (o) => o.communes.length,
  dataDate: (o) => o.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    // One indexed read of the precomputed indicators (the rows palmares_communes ranks), and what the rebuild measured.
    const [{ rows }, derives] = await Promise.all([
      ctx.services.db.query<LigneIndicateurs>(
        'SELECT * FROM marche_indicateurs WHERE dataset = $1 AND insee = ANY($2::text[])',
        [dataset, e.insee],
      ),
      lireDerives(ctx.services.db, dataset),
    ]);
    const parInsee = new Map(rows.map((r) => [r.insee, r]));
    // A commune the administrative split knows but no data has is found, every indicator null.
    const lus = e.insee.map((code) => (ARRONDISSEMENTS[code] ? null : (parInsee.get(code) ?? ligneVide(code))));
    const trouvees = lus.filter((l): l is LigneIndicateurs => l !== null);
    if (trouvees.length === 0) {
      throw new ApiError(
        'commune_introuvable',
        'Aucun des codes demandés n’est une commune connue ; rien n’est débité.',
      );
    }
    const communes = trouvees.map(sortieIndicateurs);
    const donneesDu = derives.donnees_du;
    const limites: string[] = [];
    for (const c of communes) {
      const nom = `${c.commune ?? 'Commune'} (${c.insee})`;
      if (c.prix_m2_appartement === null && c.prix_m2_maison === null) {
        limites.push(`${nom} : ${await raisonSansPrix(ctx.services.db, dataset, c.insee)}`);
      }
      if (c.loyer_m2_predit === null) limites.push(`${nom} : pas d’indicateur de loyer pour cette commune.`);
      if (c.passoires_dpe_fg_pct === null) limites.push(`${nom} : aucun DPE importé pour cette commune.`);
    }
    return {
      communes,
      meilleure_par_indicateur: meilleures(communes),
      introuvables: e.insee.filter((_, k) => lus[k] === null),
      limites,
      methode: `${METHODE_INDICATEURS}. Modèle de prix attendu : ${decrireModele(derives.modele_prix)}.`,
      donnees_du: donneesDu,
      qualite: {
        n: communes.length,
        provenance: 'mesure' as const,
        incertitude: null,
        drapeaux: [],
        methode: 'Indicateurs lus sur les agrégats de chaque commune (voir commune et prix_commune).',
        donnees_du: donneesDu,
        source: SOURCES,
      },
    };
  }),
});

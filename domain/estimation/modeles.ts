import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { defineOperation } from '../catalogue.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedFromDataset } from '../qualite.ts';
import { TYPE_MIN, VENTES_MAX } from './backtest-bareme.ts';
import { AUDITS_MAX, CIBLE_MIN, TENUE_MOIS } from './backtest-travaux.ts';
import { COUVERTURE_NOMINALE, ECHANTILLON_MAX, GROUPE_MIN } from './backtest.ts';
import { BANDE_SURFACE, RAYONS_M } from './valeur.ts';
import { lireFichePreMarche, METHODE_PRE_MARCHE } from '../pre-marche/fiche.ts';
import { TOLERANCE_PLANCHER_PCT, TOLERANCE_Z } from '../pre-marche/regression.ts';

/**
 * The reference-model sheets (GET /modeles, /modeles/{modele}): what each backtest measured, dated, with its sample
 * and perimeter, read from modeles_mesures; what was not measured is said in `limites`, never replaced by a figure.
 */

export const MODELES = ['estimation', 'pre_marche', 'travaux', 'bareme_prix', 'loyer'] as const;
type Modele = (typeof MODELES)[number];

const MesureSchema = z.object({
  indicateur: z.string(),
  libelle: z.string(),
  valeur: z.number(),
  unite: z.string().describe('pct, facteur, auc…'),
  mesure_le: z.string(),
  echantillon: z.number().int().nullable(),
  perimetre: z.string().nullable(),
  hors_echantillon: z.boolean().nullable(),
});

const CoefficientSchema = z.object({
  type_bien: z.string(),
  signal: z.string(),
  groupe: z.string(),
  n_dvf: z.number().int().describe('Exemples d’apprentissage qui portent le signal.'),
  taux_dvf_pct: z.number().nullable().describe('Leur part vendue dans les 12 mois (DVF).'),
  lift_dvf: z.number().nullable(),
  n_mise_en_vente: z.number().int().nullable().describe('Non mesuré : null (voir limites).'),
  taux_mise_en_vente_pct: z.number().nullable(),
  lift_mise_en_vente: z.number().nullable(),
  stable: z.boolean().describe('Même signe sur les deux moitiés de l’apprentissage.'),
  retenu: z.boolean(),
  coefficient: z.number(),
  calcule_le: z.string(),
});

const FicheSchema = z.object({
  modele: z.enum(MODELES),
  titre: z.string(),
  methode: z.string(),
  source: z.string(),
  mesures: z.array(MesureSchema),
  calibration: z
    .array(
      z.object({
        type_bien: z.string().describe('maison, appartement, ou tous.'),
        bande: z.string().describe('A la plus haute.'),
        indice_min: z.number(),
        indice_max: z.number(),
        n: z.number().int().describe('Exemples tenus hors de l’ajustement dans la bande.'),
        taux_vente_12m_pct: z.number().describe('Part réelle de ces exemples vendus dans les 12 mois.'),
        taux_predit_pct: z.number().describe('Probabilité moyenne que le modèle leur donnait.'),
        tolerance_pct: z
          .number()
          .describe(
            `Écart admis entre taux réel et prédit, en points : ${TOLERANCE_Z} erreurs types binomiales (99 % bilatéral : cinq bandes ensemble à 95 %) + ${TOLERANCE_PLANCHER_PCT} points.`,
          ),
        calcule_le: z.string(),
      }),
    )
    .describe('pre_marche : bandes de calibration (courbe de fiabilité) ; vide pour les autres modèles.'),
  coefficients: z
    .array(CoefficientSchema)
    .describe('pre_marche : coefficients de l’ajustement sur tous les signaux ; vide pour les autres modèles.'),
  coefficients_ajustes: z
    .array(CoefficientSchema)
    .describe('pre_marche : coefficients réajustés sur les signaux retenus, ceux qui notent ; vide sinon.'),
  decroissance: z
    .array(
      z.object({
        age_min_jours: z.number().int(),
        age_max_jours: z.number().int(),
        n: z.number().int(),
        taux_vente_12m_pct: z.number().describe('Part vendue dans les 12 mois qui suivent cet âge, sans vente avant.'),
        multiplicateur: z.number().describe('Ce taux rapporté à celui d’un DPE du jour.'),
        calcule_le: z.string(),
      }),
    )
    .describe(
      'pre_marche (forme non montrée par la spécification) : la baisse du taux de vente à 12 mois quand le DPE vieillit sans vente ; vide sinon.',
    ),
  cohortes: z
    .array(
      z.object({
        semaine: z.string().describe('Semaine ISO du début de la cohorte (AAAA-Www).'),
        type_bien: z.string(),
        cohorte: z.string().describe('Trimestre des DPE de la cohorte (AAAA-Tn).'),
        seuil_score: z.number().describe('Indice minimal de la bande haute.'),
        n_haut: z.number().int(),
        mise_en_vente_haut_pct: z.number().nullable(),
        mise_en_vente_base_pct: z.number().nullable(),
        lift_mise_en_vente: z.number().nullable(),
        n_haut_dvf: z.number().int(),
        vendu_haut_pct: z.number().nullable(),
        vendu_base_pct: z.number().nullable(),
        lift_vendu: z.number().nullable(),
        calcule_le: z.string(),
      }),
    )
    .describe(
      'pre_marche : les exemples tenus par trimestre de DPE, bande haute contre toute la cohorte ; vide sinon.',
    ),
  limites: z.array(z.string()),
  qualite: QualiteSchema,
});

const ModelesOutput = z.object({ modeles: z.array(FicheSchema) });
type Fiche = z.infer<typeof FicheSchema>;

interface Description {
  titre: string;
  methode: string;
  source: string;
  /** Said whatever the measures: what the backtest does not cover. */
  limites: string[];
}

const DESCRIPTIONS: Record<Modele, Description> = {
  estimation: {
    titre: 'Estimation déterministe (estimer_bien)',
    methode: `Backtest : le dernier millésime DVF est tenu hors échantillon ; chacune de ses ventes simples d'un logement (${ECHANTILLON_MAX} au plus, réparties par identifiant) est estimée des millésimes antérieurs seuls, par le code même d'estimer_bien (comparables du même type à ±${BANDE_SURFACE * 100} % de surface, rayon ${RAYONS_M[0]} m à ${RAYONS_M[RAYONS_M.length - 1] / 1000} km, indice départemental, sinon médiane de l'IRIS, sinon de la commune), depuis sa position, sa commune, son type et sa surface. Par type et socle : erreur absolue médiane, parts à ±10 % et ±20 %. Les ventes tenues sont partagées en deux moitiés par rang : la demi-largeur qui couvre ${COUVERTURE_NOMINALE * 100} % des prix de la première est celle qu'estimer_bien sert ; la couverture publiée est celle de cette demi-largeur sur la seconde moitié, hors échantillon ; la mesure sans type ni socle est la couverture sur toutes les ventes de contrôle des groupes calibrés, chacune avec la demi-largeur de son groupe.`,
    source: 'DVF (DGFiP, Etalab) importé ; `npm run modeles`',
    limites: [
      'Le barème (étage, état, exposition, annexes, terrain, DPE) n’est pas mesuré : DVF ne décrit pas ces caractéristiques.',
      'La mesure n’est pas encore ventilée par densité de ventes.',
      `Un groupe (type, socle) de moins de ${GROUPE_MIN} ventes par moitié n’a ni demi-largeur calibrée ni couverture ; estimer_bien y sert sa demi-largeur par défaut et le dit.`,
    ],
  },
  pre_marche: {
    titre: 'Probabilité de vente à 12 mois (pré-marché)',
    methode: METHODE_PRE_MARCHE,
    source: 'DPE et audits (ADEME), DVF (DGFiP, Etalab), SIRENE, BODACC, Sitadel importés ; `npm run modeles`',
    limites: [],
  },
  travaux: {
    titre: 'Coût de sortie des passoires énergétiques (audits)',
    methode: `Médianes, p25 et p75 du coût des travaux des audits énergétiques réglementaires, par classe de départ et cible (dpe.sortie d'estimer_bien). Backtest : les audits des ${TENUE_MOIS} derniers mois de la base sont tenus hors échantillon (${AUDITS_MAX} au plus, répartis par numéro) ; chacun, partant de E, F ou G et atteignant au moins D, est chiffré pour chaque cible qu'il atteint par le code même d'estimer_bien sur les audits antérieurs seuls (commune, sinon département, sinon toute la base). Par cible : erreur absolue médiane du coût médian servi en euros, de la médiane au m² multipliée par la surface de l'audit, et part des coûts tenus dans [p25, p75] (nominal 50 %).`,
    source: 'Audits énergétiques réglementaires (ADEME) importés ; `npm run modeles`',
    limites: [
      `Une cible de moins de ${CIBLE_MIN} audits tenus n’a pas de mesure.`,
      'Le coût d’un audit est celui de son scénario le plus complet, tel que l’auditeur l’a chiffré : pas un coût de travaux réalisés.',
    ],
  },
  bareme_prix: {
    titre: 'Barème des prix (communes)',
    methode: `Prix médians au m² par commune, type et millésime, tirés de DVF (prix_commune ; rétrécis vers les communes voisines sous 10 ventes). Backtest : les ventes d'un logement du dernier millésime sont tenues hors échantillon (${VENTES_MAX} au plus, tirage fixe par identifiant) ; chacune est comparée au prix au m² du barème de sa commune et de son type pour le millésime précédent, fait des seules ventes antérieures. Par type : erreur absolue médiane, parts à ±10 % et ±20 %, écart médian signé (la dérive d'une année de marché et de composition des ventes).`,
    source: 'DVF (DGFiP, Etalab) ; `npm run modeles`',
    limites: [
      `Un type de moins de ${TYPE_MIN} ventes tenues n’a pas de mesure.`,
      'L’intervalle du barème (demi_bande_pct) est celui de la médiane, pas celui du prix d’une vente : sa couverture des prix n’est pas mesurée. Le barème des IRIS n’est pas encore mesuré.',
    ],
  },
  loyer: {
    titre: 'Loyer estimé (carte des loyers)',
    methode:
      'Indicateur de loyer d’annonce prédit par commune (ministère du Logement, ANIL), repris tel que publié avec son intervalle de prédiction.',
    source: 'Carte des loyers',
    limites: [
      'Aucun backtest propre : le service ne détient pas de loyers observés pour mesurer l’erreur de l’indicateur. La source publie son R² ajusté par maille.',
    ],
  },
};

interface LigneMesure {
  modele: string;
  indicateur: string;
  type_bien: string;
  socle: string;
  libelle: string;
  valeur: number;
  unite: string;
  mesure_le: Date;
  echantillon: number | null;
  perimetre: string | null;
  hors_echantillon: boolean | null;
}

/** The models a backtest measures (npm run modeles, recalibrerModeles): their sheet says when it has not run. */
const AVEC_BACKTEST: readonly Modele[] = ['estimation', 'travaux', 'bareme_prix', 'pre_marche'];

async function fiches(db: Queryable, dataset: Dataset, voulus: readonly Modele[]): Promise<Fiche[]> {
  const { rows } = await db.query<LigneMesure>(
    `SELECT modele, indicateur, type_bien, socle, libelle, valeur, unite, mesure_le, echantillon, perimetre,
            hors_echantillon
       FROM modeles_mesures WHERE dataset = $1 AND modele = ANY($2::text[])
      ORDER BY modele, type_bien, socle, indicateur`,
    [dataset, voulus],
  );
  const { rows: limites } = await db.query<{ modele: string; texte: string }>(
    `SELECT modele, texte FROM modeles_limites WHERE dataset = $1 AND modele = ANY($2::text[]) ORDER BY modele, rang`,
    [dataset, voulus],
  );
  const preMarche = voulus.includes('pre_marche') ? await lireFichePreMarche(db, dataset) : null;
  return voulus.map((modele) => {
    const d = DESCRIPTIONS[modele];
    const lignes = rows.filter((r) => r.modele === modele);
    // The estimation's rows are split by type and scale, said in the label and perimeter; the other sheets write
    // theirs whole.
    const decoupee = modele === 'estimation';
    const mesures = lignes.map((r) => ({
      indicateur: r.indicateur,
      libelle: decoupee ? [r.libelle, r.type_bien, r.socle].filter(Boolean).join(' — ') : r.libelle,
      valeur: r.valeur,
      unite: r.unite,
      mesure_le: r.mesure_le.toISOString(),
      echantillon: r.echantillon,
      perimetre: [decoupee && r.type_bien && r.socle ? `${r.type_bien}, socle ${r.socle}` : null, r.perimetre]
        .filter(Boolean)
        .join(' ; '),
      hors_echantillon: r.hors_echantillon,
    }));
    const propres = limites.filter((l) => l.modele === modele).map((l) => l.texte);
    const aucune =
      mesures.length === 0 && propres.length === 0 && AVEC_BACKTEST.includes(modele)
        ? ['Aucune mesure : le backtest (npm run modeles) n’a pas tourné sur ces données, ou n’avait rien à mesurer.']
        : [];
    const date = mesures.reduce<string | null>((m, x) => (m === null || x.mesure_le > m ? x.mesure_le : m), null);
    return {
      modele,
      titre: d.titre,
      methode: d.methode,
      source: d.source,
      mesures,
      calibration: modele === 'pre_marche' ? (preMarche?.calibration ?? []) : [],
      coefficients: modele === 'pre_marche' ? (preMarche?.coefficients ?? []) : [],
      coefficients_ajustes: modele === 'pre_marche' ? (preMarche?.coefficients_ajustes ?? []) : [],
      decroissance: modele === 'pre_marche' ? (preMarche?.decroissance ?? []) : [],
      cohortes: modele === 'pre_marche' ? (preMarche?.cohortes ?? []) : [],
      limites: [...aucune, ...propres, ...d.limites],
      qualite: {
        n: mesures.length ? Math.max(...mesures.map((m) => m.echantillon ?? 0)) : null,
        provenance: mesures.length ? 'mesure' : null,
        incertitude: null,
        drapeaux: [],
        methode: d.methode,
        donnees_du: date,
        source: d.source,
      },
    };
  });
}

const DESCRIPTION = `Fiche de mesure de chaque modèle de référence : ce que son backtest a mesuré sur les données détenues, chaque mesure avec sa date (\`mesure_le\`), son échantillon et son périmètre. Une mesure absente est dite dans \`limites\`, jamais remplacée par un chiffre. Sans \`modele\`, toutes les fiches (estimation, pre_marche, travaux, bareme_prix, loyer).

**estimation** : mesurée par \`npm run modeles\` (à lancer après chaque import DVF) : le dernier millésime tenu hors échantillon, estimé des précédents par le code d'estimer_bien ; par type et socle : \`erreur_absolue_mediane\`, \`part_10\`, \`part_20\`, \`demi_largeur_80\` (la demi-largeur qu'estimer_bien sert, calibrée sur une moitié des ventes tenues) et \`couverture_80\` (part des prix de l'autre moitié dans \`[bas, haut]\`, nominal 80 %, \`hors_echantillon\` vrai). Le type et le socle de chaque mesure sont dans \`perimetre\`. Une mesure \`couverture_80\` de plus, sans type ni socle (\`perimetre\` « toutes ventes »), donne la couverture sur toutes les ventes de contrôle des groupes calibrés, chacune avec la demi-largeur de son groupe : ce qu'un utilisateur rencontre d'une estimation à l'autre.

**travaux** : les audits des ${TENUE_MOIS} derniers mois tenus hors échantillon, chiffrés sur les antérieurs par le code de \`dpe.sortie\` ; par cible (D, C, B, dans \`perimetre\`) : \`erreur_absolue_mediane\` (coût médian en euros), \`erreur_absolue_mediane_surface\` (médiane au m² × surface), \`couverture_p25_p75\` (nominal 50 %).

**bareme_prix** : les ventes d'un logement du dernier millésime comparées au barème de leur commune du millésime précédent ; par type : \`erreur_absolue_mediane\`, \`part_10\`, \`part_20\`, \`biais_median\` (signé, positif quand le barème surestime).

**Calendrier.** \`npm run modeles\` lance ces backtests ; chaque import DVF les relance par le workflow Temporal \`recalibrerModeles\` quand \`TEMPORAL_ADDRESS\` est défini (un seul par version des données : identifiant \`recalibrer-modeles-<jeu>-<version>\`), et le chargement du bac à sable les lance lui-même.

**pre_marche** : la probabilité de vente à 12 mois de pre_marche_adresse et pre_marche_zone, entraînée et mesurée par \`npm run modeles\` sur des adresses tenues hors de l'ajustement : \`taux_base\`, \`taux_bande_haute\`, \`auc\`, \`ecart_calibration_max\` (points), \`bandes_dans_la_tolerance\` (pct) ; \`calibration\` : chaque bande avec son taux réel (\`taux_vente_12m_pct\`), le taux que le modèle prédisait pour les mêmes exemples (\`taux_predit_pct\`) et l'écart admis (\`tolerance_pct\` : ${TOLERANCE_Z} erreurs types binomiales, le quantile bilatéral à 99 % qui tient cinq bandes ensemble à 95 %, + ${TOLERANCE_PLANCHER_PCT} points) ; \`coefficients\` (tous les signaux) et \`coefficients_ajustes\` (les retenus, qui notent) ; \`decroissance\` ; \`cohortes\` par trimestre de DPE. Les champs de mise en vente (annonces) sont null : non mesurés.

**Décisions.** loyer n'a pas de backtest : sa fiche est servie, sans mesure, et \`limites\` le dit. \`calibration\`, \`coefficients\`, \`coefficients_ajustes\`, \`decroissance\`, \`cohortes\` appartiennent au modèle pre_marche : vides pour les autres. \`qualite.n\` : le plus grand échantillon des mesures ; \`qualite.donnees_du\` : la date de la mesure la plus récente.`;

const COMMUN = {
  tool: 'modeles',
  method: 'GET',
  credits: 0,
  unit: 'appel',
  scope: 'references',
  tier: 'usage',
  sandbox: true,
  cacheS: 3600,
  timeoutS: 3,
  description: DESCRIPTION,
  output: ModelesOutput,
  dataDate: (o: z.infer<typeof ModelesOutput>) =>
    o.modeles.reduce<string | null>(
      (d, f) => (f.qualite.donnees_du && (d === null || f.qualite.donnees_du > d) ? f.qualite.donnees_du : d),
      null,
    ),
} as const;

export const modeles = defineOperation({
  ...COMMUN,
  path: '/modeles',
  summary: 'Fiches de mesure des modèles de référence',
  input: z.object({}),
  handler: servedFromDataset(async (_e, ctx, dataset) => ({
    modeles: await fiches(ctx.services.db, dataset, MODELES),
  })),
});

export const modelesModele = defineOperation({
  ...COMMUN,
  variant: 'modele',
  path: '/modeles/{modele}',
  summary: 'Fiche de mesure d’un modèle de référence',
  input: z.object({ modele: z.enum(MODELES).describe('Le modèle.') }),
  handler: servedFromDataset(async (e, ctx, dataset) => ({
    modeles: await fiches(ctx.services.db, dataset, [e.modele]),
  })),
});

export const modelesOperations = [modeles, modelesModele];

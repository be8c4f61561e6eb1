import { z } from 'zod';
import type { Queryable } from '../../db/client.ts';
import { defineOperation } from '../catalogue.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { QualiteSchema, servedFromDataset } from '../qualite.ts';
import { TYPE_MIN, VENTES_MAX } from './backtest-bareme.ts';
import { AUDITS_MAX, CIBLE_MIN, TENUE_MOIS } from './backtest-travaux.ts';
import { COUVERTURE_NOMINALE, ECHANTILLON_MAX, GROUPE_MIN } from './backtest.ts';
import { BANDE_SURFACE, RAYONS_M } from './valeur.ts';

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

const FicheSchema = z.object({
  modele: z.enum(MODELES),
  titre: z.string(),
  methode: z.string(),
  source: z.string(),
  mesures: z.array(MesureSchema),
  calibration: z.array(
    z.object({
      type_bien: z.string(),
      bande: z.string(),
      indice_min: z.number(),
      indice_max: z.number(),
      n: z.number().int(),
      taux_vente_12m_pct: z.number(),
      calcule_le: z.string(),
    }),
  ),
  coefficients: z.array(z.record(z.string(), z.unknown())),
  coefficients_ajustes: z.array(z.record(z.string(), z.unknown())),
  decroissance: z
    .array(z.record(z.string(), z.unknown()))
    .describe('Forme des éléments : non montrée par la spécification ; vide ici.'),
  cohortes: z.array(z.record(z.string(), z.unknown())),
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
    methode: 'Calibration des scores sur les ventes DVF observées dans les 12 mois.',
    source: 'Domaine pré-marché',
    limites: [
      'Le domaine pré-marché n’est pas encore servi : aucune calibration, aucun coefficient, aucune cohorte mesurés.',
    ],
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
const AVEC_BACKTEST: readonly Modele[] = ['estimation', 'travaux', 'bareme_prix'];

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
      calibration: [],
      coefficients: [],
      coefficients_ajustes: [],
      decroissance: [],
      cohortes: [],
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

**Décisions.** pre_marche et loyer n'ont pas de backtest : leur fiche est servie, sans mesure, et \`limites\` le dit. \`calibration\`, \`coefficients\`, \`coefficients_ajustes\`, \`decroissance\`, \`cohortes\` appartiennent au modèle pre_marche : vides tant que ce domaine n'est pas servi. \`qualite.n\` : le plus grand échantillon des mesures ; \`qualite.donnees_du\` : la date de la mesure la plus récente.`;

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

import { z } from 'zod';
import { defineOperation } from '../catalogue.ts';
import { communeByCode, departementOf } from '../communes.ts';
import { ApiError, invalidField } from '../errors.ts';
import { ARRONDISSEMENTS, Insee } from './entrees.ts';
import { ventesCodePostal, ventesCommune } from './ventes.ts';
import { communeMarche, comparerCommunes } from './commune.ts';
import { avisZone, avisZonePublier } from './avis.ts';
import { prixIris, prixIrisCommune } from './iris.ts';
import { palmaresCommunes } from './palmares.ts';
import { secteur } from './secteur.ts';
import { QualiteSchema, servedFromDataset } from '../qualite.ts';
import {
  bareme,
  evolution,
  indiceDepartement,
  ligneIndexee,
  lireMarche,
  METHODE_EVOLUTION,
  PRIOR_VENTES,
  SEUIL_CONFIANCE,
  SEUIL_MESURE,
  serie,
  TYPES_LOGEMENT,
} from './prix.ts';
import { absenceDvf } from '../couverture.ts';

const TypeLogement = z.enum(['appartement', 'maison']);
const nul = <T extends z.ZodType>(t: T) => t.nullable();
const Variations = z.object({ un_an: nul(z.number()), trois_ans: nul(z.number()), cinq_ans: nul(z.number()) });

const PrixCommuneOutput = z.object({
  insee: z.string(),
  commune: z.string().nullable(),
  limites: z
    .array(z.string())
    .describe(
      'Pourquoi le barème est vide quand il l’est : hors DVF (Alsace-Moselle, Mayotte), aucune vente, DVF non chargé.',
    ),
  bareme: z.array(
    z.object({
      type: TypeLogement,
      millesime: z.number().int(),
      prix_m2: nul(z.number()).describe('Prix de référence (€/m²).'),
      label: z.enum(['mesure', 'estime']).nullable(),
      n_ventes: z.number().int().describe('Ventes de la commune, du type, sur le millésime.'),
      n_ventes_recentes: z.number().int().describe('Ventes du type sur le millésime et le précédent.'),
      nb_voisins: z.number().int().describe('Communes voisines ayant des ventes du type ce millésime.'),
      n_ventes_bassin: z.number().int().describe('Ventes de ces communes voisines.'),
      poids_local: nul(z.number()).describe('Part du prix portée par les ventes de la commune (0-1).'),
      dominance: nul(z.number()).describe('Part du type dans les ventes de la commune du millésime (0-1).'),
      demi_bande_pct: nul(z.number()),
      prix_m2_local: nul(z.number()).describe('Médiane des seules ventes de la commune.'),
      qualite: QualiteSchema,
    }),
  ),
  serie: z.array(
    z.object({
      annee: z.number().int(),
      prix_m2_appartement: nul(z.number()),
      prix_m2_maison: nul(z.number()),
      prix_m2_global: nul(z.number()),
      transactions: z.number().int(),
      transactions_appartement: z.number().int(),
      transactions_maison: z.number().int(),
      min_appartement: nul(z.number()),
      max_appartement: nul(z.number()),
      min_maison: nul(z.number()),
      max_maison: nul(z.number()),
      basse_confiance_appartement: nul(z.boolean()),
      basse_confiance_maison: nul(z.boolean()),
    }),
  ),
  evolution: z
    .object({
      appartement: Variations,
      maison: Variations,
      global: Variations,
      tendance_5_ans: z.enum(['hausse', 'baisse', 'stable']).nullable(),
      confiance: z.enum(['haute', 'moyenne', 'basse']),
      derniere_annee: z.number().int(),
      transactions_annee_recente: z.number().int(),
      transactions_3_ans: z.number().int(),
      departement: z.object({ un_an: nul(z.number()), trois_ans: nul(z.number()) }),
      qualite: QualiteSchema,
    })
    .nullable(),
  ligne_indexee: z.array(
    z.object({ annee: z.number().int(), prix_m2_appartement: nul(z.number()), prix_m2_maison: nul(z.number()) }),
  ),
  indice_departement: z.array(
    z.object({
      departement: z.string(),
      type: TypeLogement,
      annee: z.number().int(),
      coef: z.number(),
      n_ventes: z.number().int(),
    }),
  ),
  donnees_du: z.string().nullable().describe('Date de la vente la plus récente de la base (AAAA-MM-JJ).'),
});

const DESCRIPTION_PRIX = `Barème des prix au m² d'une commune par type de logement et millésime, calculé sur DVF, avec sa série annuelle, son évolution et l'indice de son département. Lu sur des agrégats recalculés après chaque import DVF (une lecture indexée), jamais sur les ventes brutes à la demande.

**Ventes retenues.** Ventes (vente, VEFA, adjudication) d'un seul logement dont le prix au m² se lit comme celui du logement : ni vente en bloc, ni local professionnel, ni prix hors 200-25 000 €/m² (ou de 1 € et moins), ni surface moyenne hors 9-1 000 m² ; une dépendance vendue avec reste (même répétée sur deux lignes : le prix au m² ne compte que la surface du logement). Le type est celui du logement.

**Barème** (\`bareme\`, un élément par type et millésime où la commune ou ses voisines ont des ventes). \`prix_m2_local\` : médiane des ventes de la commune. \`label\` **mesure** quand la commune a au moins ${SEUIL_MESURE} ventes du type sur le millésime et le précédent (\`n_ventes_recentes\`) : \`prix_m2\` est alors sa médiane. Sinon **estime** : rétrécissement vers le bassin, \`prix_m2\` = poids_local × médiane locale + (1 − poids_local) × prix du bassin, avec \`poids_local\` = n_ventes / (n_ventes + ${PRIOR_VENTES}) ; le prix du bassin est la moyenne des médianes des communes voisines (centre à moins de ~15 km, \`nb_voisins\` ; le centre d'une commune est celui du découpage administratif, à défaut le point médian de ses ventes DVF géolocalisées), pondérée par leurs ventes (\`n_ventes_bassin\`). Sans voisine vendue, la médiane locale est servie en \`mesure\` quel que soit son nombre de ventes ; \`label\` null : aucune vente dans la commune (le bassin seul n'est pas servi comme mesure). \`dominance\` : part du type dans les ventes d'un logement de la commune ce millésime. \`demi_bande_pct\` : demi-largeur de l'intervalle à ~95 % d'une médiane, 1,58 × écart interquartile / √n, en % du prix ; dispersion mesurée dans la commune (au moins ${SEUIL_CONFIANCE} ventes), sinon dans le département ; n = ventes locales (+ ${PRIOR_VENTES} pour une estimation).

**Rien n'est masqué.** Un chiffre sur moins de ${SEUIL_CONFIANCE} ventes est servi avec son nombre de ventes, le drapeau \`peu_d_observations\` et, dans \`serie\`, \`basse_confiance_*\` vrai (null : aucune vente du type cette année).

**Évolution.** ${METHODE_EVOLUTION} null quand la commune n'a aucune vente.

**Indice du département** (\`indice_departement\`) : par type et année, médiane des ventes d'un logement du département divisée par celle de sa dernière année (coef 1). Médianes de toutes les ventes de chaque année, non un indice de ventes répétées (DVF ne relie pas de façon fiable les ventes successives d'un même logement) : la composition de ce qui se vend chaque année le fait aussi bouger. \`ligne_indexee\` : le dernier prix du barème de la commune par type multiplié par le coef de chaque année.

**Décisions.** Paris (75056), Lyon (69123) et Marseille (13055) se lisent par arrondissement (75101-75120, 69381-69389, 13201-13216) : leur code de commune répond 400. Alsace-Moselle (57, 67, 68) et Mayotte, absents de DVF : barème et série vides, \`evolution\` null. Code inconnu (ni au découpage administratif ni dans les agrégats) : 404 \`commune_introuvable\`, rien n'est débité. \`type\` restreint \`bareme\` à un type ; \`serie\` et le reste restent complets.`;

export const prixCommune = defineOperation({
  tool: 'prix_commune',
  method: 'GET',
  path: '/communes/{insee}/prix',
  summary: 'Barème des prix au m² d’une commune, série, évolution et indice départemental',
  description: DESCRIPTION_PRIX,
  credits: 2,
  unit: 'appel',
  scope: 'territoire',
  tier: 'usage',
  sandbox: true,
  territoires: (e: { insee: string }) => [{ commune: e.insee }],
  cacheS: 86_400,
  timeoutS: 4,
  errors: ['commune_introuvable'],
  input: z.object({
    insee: Insee,
    type: TypeLogement.optional().describe('appartement ou maison ; les deux par défaut.'),
  }),
  output: PrixCommuneOutput,
  dataDate: (o) => o.donnees_du,
  handler: servedFromDataset(async (e, ctx, dataset) => {
    const arrondissements = ARRONDISSEMENTS[e.insee];
    if (arrondissements) {
      throw invalidField('insee', `Cette ville se lit par arrondissement municipal (${arrondissements}).`, 'chemin');
    }
    const commune = communeByCode(e.insee);
    const departement = commune?.departement ?? departementOf(e.insee);
    const marche = await lireMarche(ctx.services.db, dataset, e.insee, departement);
    if (!commune && marche.lignes.length === 0) {
      throw new ApiError('commune_introuvable', `Aucune commune n’a le code ${e.insee} ; rien n’est débité.`);
    }
    const absente = absenceDvf(departement) !== null;
    const items = absente ? [] : bareme(marche, e.type ? [e.type] : TYPES_LOGEMENT, marche.donneesDu);
    const indice = absente ? [] : indiceDepartement(departement, marche.departement);
    const tous = e.type ? bareme(marche, TYPES_LOGEMENT, marche.donneesDu) : items;
    // An empty scale always says why: not in DVF, no sale of the commune or its neighbours, no DVF loaded.
    const limites = absente
      ? [absenceDvf(departement)!]
      : items.length > 0
        ? []
        : marche.donneesDu === null
          ? ['Aucune vente DVF n’est chargée pour ces données : importer DVF (npm run import -- dvf).']
          : [
              `Aucune vente de logement retenue dans la commune ni dans ses voisines sur les millésimes DVF détenus (jusqu’au ${marche.donneesDu})${e.type ? ` pour le type ${e.type}` : ''} : le barème est vide.`,
            ];
    return {
      insee: e.insee,
      commune: commune?.nom ?? null,
      limites,
      bareme: items,
      serie: absente ? [] : serie(marche.lignes),
      evolution: absente ? null : evolution(marche, marche.donneesDu),
      ligne_indexee: ligneIndexee(tous, indice),
      indice_departement: indice,
      donnees_du: marche.donneesDu,
    };
  }),
});

/** The Communes market operations, for the catalogue. */
export const marcheOperations = [
  communeMarche,
  comparerCommunes,
  palmaresCommunes,
  prixCommune,
  prixIris,
  prixIrisCommune,
  secteur,
  ventesCommune,
  ventesCodePostal,
  avisZonePublier,
  avisZone,
];

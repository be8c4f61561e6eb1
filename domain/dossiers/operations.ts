import { z } from 'zod';
import { CreditsSchema, defineOperation, type OperationContext } from '../catalogue.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import { balanceOf } from '../platform/ledger.ts';
import { servedSource } from '../qualite.ts';
import { createTask, envelopeOf, MAX_WAIT_S, readTask, taskEnvelopeSchema, type TaskRow } from '../taches/taches.ts';
import { subscriptionOfUrl } from '../webhooks/evenements.ts';
import type { Piece } from './dessins.ts';
import { localiser } from './site.ts';
import { blocsDuSite, cartoucheDe, dessiner, etudier, livrerFeuilles, questionsDe, type Etude } from './etude.ts';
import { nomFormalite } from './formalite.ts';
import { FORMALITES, LieuSchema, ProjetSchema } from './projet.ts';
import {
  AdresseSchema,
  BatimentSchema,
  CoupeSchema,
  DossierResultSchema,
  FacadeSchema,
  FeuilleSchema,
  FormaliteEnum,
  ParcelleSchema,
  ProjetMesureSchema,
  QualiteSchema,
  QuestionSchema,
  RefusSchema,
} from './schemas.ts';

export const MENTION =
  'Documents établis à partir du cadastre et des données déclarées, à vérifier sur place : ils ne remplacent ni le relevé d’un géomètre ni l’avis du service instructeur ; seul un certificat d’urbanisme engage la commune.';

const SOURCES = [
  'Cadastre Etalab (cadastre.data.gouv.fr) : parcelles et bâtiments',
  'Géoportail de l’Urbanisme : zonage et servitudes',
  'Code de l’urbanisme, articles R.420-1, R.421-1 à R.421-25 et R.431-2 (Légifrance)',
];

const LIMITES = [
  'Repère local en Lambert-93 (EPSG:2154) : le nord des plans est le nord du quadrillage, à moins de 3° du nord géographique en métropole.',
  'Les limites sans parcelle voisine sont présumées donner sur une voie ou le domaine public.',
  'Surface de plancher prise égale à l’emprise, murs compris : un majorant, que l’architecte ou le demandeur précise.',
];

export const CoupesFacadesOutput = z.object({
  adresse: AdresseSchema,
  origine: z.object({ lat: z.number(), lon: z.number() }).describe('Origine du repère local (centre de la parcelle).'),
  parcelle: ParcelleSchema,
  batiments: z.array(BatimentSchema),
  projets: z.array(ProjetMesureSchema),
  coupes: z.array(CoupeSchema),
  facades: z.array(FacadeSchema),
  feuilles: z.array(FeuilleSchema),
  refus: RefusSchema,
  formalite_derivee: FormaliteEnum.nullable(),
  faits_manquants: z.array(z.string()),
  questions: z.array(QuestionSchema),
  constats: z.array(z.string()),
  a_confirmer: z.array(z.string()),
  sources: z.array(z.string()),
  limites: z.array(z.string()),
  mention: z.string(),
  genere_le: z.string(),
  qualite: QualiteSchema,
});

export function qualiteDe(etude: Etude, source: string) {
  return {
    n: etude.site.batiments.length + etude.site.voisines.length + 1,
    provenance: 'mesure' as const,
    incertitude: null,
    drapeaux: etude.site.altitude_terrain_m === null ? (['valeur_imputee'] as const).slice() : [],
    methode: 'Géométrie du cadastre projetée en Lambert-93 ; mesures à partir des contours, au centimètre.',
    donnees_du: null,
    source,
  };
}

const DESCRIPTION_COUPES = `Les coupes et les façades des projets (extension, annexe, abri, garage, carport, piscine, terrasse, véranda) sur une parcelle du cadastre : chaque mesure calculée par le service, et chaque feuille dessinée à l'échelle en PDF, avec son lien de téléchargement signé.

Le terrain est la parcelle \`idu\`, sinon celle sous le point (\`lat\`, \`lon\`), sinon celle sous l'adresse (\`adresse\`, \`code_postal\`). Chaque projet est placé dans un repère local en Lambert-93 par son \`ancrage\` (contre la façade \`cote\` du bâtiment principal, à \`distance_limite_m\` de la limite du côté \`cote\`, au centre de la parcelle) avec \`calage\` et \`decalage_m\`, ou par son \`contour_wgs84\`.

- \`coupes\` : pour chaque projet, la coupe de limite à limite dans le sens \`sens_coupe\` (défaut : perpendiculaire au côté) : terrain naturel, profil du projet, hauteur maximale au-dessus du sol, plafond de hauteur du PLU quand le règlement de la zone a été lu, distances aux limites le long de la coupe, déblai et remblai.
- \`facades\` : façade principale et latérale (ou toutes), ouvertures placées par \`position_m\` depuis le bord gauche vu de l'extérieur, toiture par \`toiture\`, \`pente_toiture_deg\`, \`sens_faitage\`, matériaux. Une piscine ou une terrasse n'a pas de façade.
- \`feuilles\` : une feuille par coupe et par projet à façades, au 1/100, 1/200 ou 1/500, la plus grande échelle qui tient sur un A4 paysage, sinon un A3 ; cartouche avec adresse, parcelle, échelle et date. Chaque cote écrite sur une feuille est la valeur du JSON, au centimètre.

Décisions :
- Prix 20 crédits par appel réussi ; portée \`urbanisme\`, palier \`usage\` ; pas de bac à sable ; jamais en cache (les liens des feuilles sont neufs à chaque appel) ; délai 30 s ; réponse dans la requête.
- Corps : \`projets\` (1 à 6), \`pieces\` (coupe, facades ; défaut les deux), et le lieu comme \`preparer_dossier\` : \`idu\`, \`lat\`/\`lon\`, \`adresse\`/\`code_postal\`. \`altitude_terrain_m\` (altitude NGF du terrain naturel) s'ajoute : sans elle, le terrain est plat, les niveaux sont relatifs au sol et \`faits_manquants\` le dit (aucun modèle d'élévation n'est disponible hors ligne).
- \`formalite_derivee\` : la formalité que le Code de l'urbanisme impose aux projets (voir \`preparer_dossier\`) ; \`refus\` : une règle lue du PLU qui interdit le projet. Les règles viennent du cache de \`lire_plu\` : une zone jamais lue n'est pas lue ici (le délai de 30 s ne le permet pas), \`a_confirmer\` le dit.
- Une parcelle inconnue, ou aucune parcelle sous le point ou l'adresse : 404 \`ressource_absente\` ; une adresse inconnue : 404 \`adresse_introuvable\` ; rien n'est débité.`;

const PIECES_COUPES = ['coupe', 'facades'] as const;

export const coupesFacades = defineOperation({
  tool: 'coupes_facades',
  method: 'POST',
  effect: 'lecture',
  path: '/urbanisme/coupes',
  summary: 'Coupes et façades à l’échelle des projets d’une parcelle',
  description: DESCRIPTION_COUPES,
  credits: 20,
  unit: 'appel',
  scope: 'urbanisme',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  timeoutS: 30,
  errors: ['ressource_absente', 'adresse_introuvable', 'service_indisponible'],
  input: z.strictObject({
    projets: z.array(ProjetSchema).min(1).max(6),
    pieces: z
      .array(z.enum(PIECES_COUPES))
      .min(1)
      .max(2)
      .optional()
      .describe('Pièces à dessiner : coupe, facades (défaut : les deux).'),
    ...LieuSchema,
  }),
  output: CoupesFacadesOutput,
  async handler(input, ctx) {
    const files = ctx.services.files;
    if (!files)
      throw new ApiError(
        'service_indisponible',
        'Le stockage des fichiers générés n’est pas configuré sur ce service.',
      );
    const etude = await etudier(ctx.services.db, input, input.projets, {});
    const now = ctx.services.now();
    const pieces = (input.pieces ?? [...PIECES_COUPES]) as Piece[];
    const dessins = await dessiner(etude, pieces, cartoucheDe(etude.site, now));
    ctx.signal.throwIfAborted();
    const feuilles = await livrerFeuilles(files, dessins.feuilles, now, 'coupes').catch(() => {
      throw new ApiError('service_indisponible', 'Le stockage des fichiers ne répond pas ; rien n’a été débité.');
    });
    const f = etude.formalite;
    const resultat = {
      ...blocsDuSite(etude, dessins),
      coupes: dessins.coupes,
      facades: dessins.facades,
      feuilles,
      refus: etude.refus,
      formalite_derivee: f.formalite,
      faits_manquants: etude.faits_manquants,
      questions: questionsDe(etude),
      constats: [
        ...etude.constats,
        `Formalité : ${nomFormalite(f.formalite)} (article ${f.decisive.article} : ${f.decisive.projet}, ${f.decisive.motif}).`,
        ...etude.alertes,
      ],
      a_confirmer: [...(etude.regles.raison ? [etude.regles.raison] : []), ...etude.non_mesurables],
      sources: SOURCES,
      limites: LIMITES,
      mention: MENTION,
      genere_le: now.toISOString(),
    };
    return servedSource(ctx.services.db, 'live', { ...resultat, qualite: qualiteDe(etude, 'Cadastre Etalab') });
  },
});

// ---------------------------------------------------------------------------------------------------------------
// The dossier: a task.

const DossierEnvelopeSchema = taskEnvelopeSchema(DossierResultSchema).extend({ credits: CreditsSchema });
const RESULT_PATH = (id: string) => `/api/v1/urbanisme/dossiers/${id}`;
const attendre = nombre(z.number().int().min(0).max(MAX_WAIT_S).default(0)).describe(
  'Secondes d’attente de la fin de la tâche (0-60) avant de répondre.',
);

async function served(row: TaskRow, ctx: OperationContext, restants?: number | null) {
  const balance =
    restants !== undefined
      ? restants
      : ctx.caller.sandbox
        ? null
        : (await balanceOf(ctx.services.db, ctx.caller.organisationId, ctx.caller.cleId)).restants;
  const { envelope, credits } = envelopeOf(row, RESULT_PATH, balance);
  return { ...envelope, credits } as z.infer<typeof DossierEnvelopeSchema>;
}

async function waitFor(row: TaskRow, seconds: number, ctx: OperationContext): Promise<TaskRow> {
  if (seconds <= 0 || row.statut === 'terminee' || row.statut === 'echouee') return row;
  await ctx.services.taskEnds?.wait(row.id, seconds * 1000, ctx.signal);
  return (await readTask(ctx.services.db, row.id, ctx.caller.organisationId)) ?? row;
}

const AnnotationSchema = z.strictObject({
  type: z.enum(['arbre', 'acces', 'stationnement', 'reseau', 'vue_photo']),
  position_wgs84: z.array(z.number().min(-180).max(180)).min(2).max(2).optional(),
  etat: z.enum(['conserve', 'abattu', 'plante']).optional(),
  diametre_m: z.number().min(0).max(100).optional(),
  azimut_deg: z.number().min(-360).max(720).optional(),
  nature: z.enum(['vehicule', 'pieton']).optional(),
  largeur_m: z.number().min(0).max(100).optional(),
  longueur_m: z.number().min(0).max(100).optional(),
  reseau: z.enum(['eau', 'electricite', 'assainissement']).optional(),
  trace_wgs84: z.array(z.array(z.number())).max(50).optional(),
  numero: z.number().min(0).max(1000).optional(),
  piece: z.enum(['proche', 'lointain']).optional(),
});

const DESCRIPTION_DOSSIER = `Prépare le dossier de dépôt d'un projet (extension, annexe, abri, garage, carport, piscine, terrasse, véranda) : le terrain et les projets mesurés, les règles écrites du PLU vérifiées, la formalité que la loi impose et son formulaire, les plans à l'échelle, la notice descriptive, les pièces dans l'ordre du bordereau avec leur état, ce qui manque, et les données à reporter dans le formulaire (\`donnees_cerfa\`).

La réponse est une tâche : toujours 202 et \`Location\` ; le résultat se lit à \`GET /urbanisme/dossiers/{tache}\` (\`resultat_preparer_dossier\`). Les 200 crédits sont réservés au départ, débités au succès, rendus en cas d'échec.

Étapes : localisation de la parcelle → modèle du site (parcelle, voisines, bâtiments du cadastre en Lambert-93 ; projets placés comme pour \`coupes_facades\`) → règles → formalité → plans → notice → bordereau.

- **Règles** : celles de la zone, lues par \`lire_plu\` et prises dans son cache. Chaque règle de forme mesurable (\`distance_min\`, \`formule_hauteur\` avec \`diviseur\`, \`limite_ou_recul\`, \`plafond\`, \`pourcentage_max\`) est vérifiée contre les mesures : \`respectee\`, \`non_respectee\` ou \`a_confirmer\` (citation trouvée hors du chapitre de la zone), avec sa citation, son article et sa page ; une règle non respectée est une \`alerte\` ; une règle qui interdit le projet donne \`refus\`. Une zone jamais lue l'est pendant le dossier, comme par \`lire_plu\` (une tâche \`lire_plu\` de l'organisation, sans crédit de plus, dans le délai du dossier ; sa lecture reste en cache pour tous) ; un règlement numérisé, absent, ou une lecture qui échoue ne sont jamais comblés : \`regles.etat\` (\`scanne\`, \`sans_reglement\`, \`zone_absente\`, \`lecture_echouee\`) et \`regles.raison\` le disent, rien n'est vérifié, et le dossier se termine quand même.
- **Formalité** : déduite du projet, jamais reprise de la demande, chaque décision citant son article du Code de l'urbanisme : construction nouvelle de 5 m² au plus dispensée (R.421-2 a)), de 5 à 20 m² en déclaration (R.421-9 a)), au-delà en permis (R.421-1) ; extension de 5 à 20 m² en déclaration (R.421-17 f)), jusqu'à 40 m² en zone urbaine d'un PLU sauf si la surface totale dépasse alors 150 m² (R.421-14 b)), au-delà en permis ; piscine de 10 m² au plus dispensée (R.421-2 d)), jusqu'à 100 m² non couverte ou couverte à moins de 1,80 m en déclaration (R.421-9 f)), au-delà en permis ; secteur protégé (servitude AC1, AC2 ou AC4 sur la parcelle) : déclaration pour ce qui serait dispensé (R.421-11) ; architecte obligatoire au-delà de 150 m² après travaux pour une personne physique ou une exploitation agricole, toujours pour une société (R.431-2). La \`formalite\` déclarée est comparée : \`formalite.correction\` explique l'écart avec l'article qui décide. Formulaire : cerfa 13703 (déclaration, maison individuelle), 13404 (déclaration, autres), 13406 (permis, maison individuelle), 13409 (permis, autres).
- **Pièces** : dans l'ordre du bordereau (DPMI1… ou PCMI1…) : plan de masse, coupes et façades \`prete\` (dessinés ici, PDF à l'échelle avec leur lien signé), notice \`prete\` (PDF et Word) ; plan de situation, insertion et photographies \`a_fournir_par_le_demandeur\` ; déclaration des éléments des impositions \`a_produire_par_une_operation\` (\`taxe_amenagement\`).
- **Notice** : rédigée par le modèle à partir des seuls faits calculés du dossier ; chaque chiffre vérifié contre eux : une phrase portant un chiffre qui n'en est pas un est retirée et comptée (\`notice.chiffres_ecartes\`). Sans modèle ou s'il échoue, la pièce reste \`a_fournir_par_le_demandeur\` avec les faits qu'elle doit reprendre ; le dossier se termine quand même.

Décisions :
- Lieu : \`idu\`, sinon le point (\`lat\`, \`lon\`), sinon \`adresse\` (\`code_postal\`) ; \`altitude_terrain_m\` (NGF) s'ajoute, sans elle le terrain est plat et \`faits_manquants\` le dit. La parcelle est cherchée avant la tâche : une parcelle ou une adresse inconnue répond 404 (\`ressource_absente\`, \`adresse_introuvable\`) sans rien réserver.
- \`recul_limites_m\` : distance aux limites des projets ancrés depuis une limite qui ne donnent pas la leur ; \`distance_min_batiments_m\` et \`distance_max_maison_m\` : contrôlées, un écart est un \`constat\` ; \`choix_implantation\` est accepté sans effet (l'implantation est celle de l'ancrage de chaque projet) ; les \`annotations\` sont dessinées sur le plan de masse (arbres, accès, stationnement, réseaux, points de vue des photographies avec leur azimut).
- \`coupes: false\` : le plan de masse seul, sans coupes ni façades.
- Pas d'archive ZIP (elle se constitue dans le Hub). Les liens des feuilles et de la notice valent le temps des liens de documents (\`expire_le\`) ; le résultat est gardé 7 jours.
- \`webhook\` et \`Idempotency-Key\` : comme pour \`lire_plu\`.`;

export const preparerDossier = defineOperation({
  tool: 'preparer_dossier',
  method: 'POST',
  effect: 'lecture',
  texteTiers: true,
  path: '/urbanisme/dossiers',
  summary: 'Dossier de dépôt d’un projet : formalité, règles vérifiées, plans et pièces',
  description: DESCRIPTION_DOSSIER,
  credits: 200,
  unit: 'appel',
  scope: 'urbanisme',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  timeoutS: 150,
  task: true,
  errors: ['ressource_absente', 'adresse_introuvable', 'conflit', 'service_indisponible'],
  input: z.strictObject({
    ...LieuSchema,
    recul_limites_m: z.number().min(0).max(50).optional(),
    distance_min_batiments_m: z.number().min(0).max(50).optional(),
    distance_max_maison_m: z.number().min(1).max(200).optional(),
    choix_implantation: z.enum(['A', 'B', 'C']).optional(),
    formalite: z
      .enum(FORMALITES)
      .optional()
      .describe('Formalité déclarée : jamais crue, comparée à celle que la loi impose.'),
    demandeur: z.enum(['personne_physique', 'exploitation_agricole', 'societe']).optional(),
    surface_plancher_creee_m2: z.number().min(0).max(1_000_000).optional(),
    surface_plancher_totale_apres_travaux_m2: z.number().min(0).max(1_000_000).optional(),
    emprise_au_sol_totale_apres_travaux_m2: z.number().min(0).max(1_000_000).optional(),
    annotations: z.array(AnnotationSchema).max(60).optional(),
    projets: z.array(ProjetSchema).min(1).max(6),
    maison_individuelle: z.boolean().optional().describe('Défaut true : formulaires 13703 et 13406.'),
    coupes: z.boolean().optional().describe('false : ni coupes ni façades, le plan de masse seul.'),
    attendre,
    webhook: z
      .url({ protocol: /^https?$/ })
      .max(500)
      .optional(),
  }),
  output: DossierEnvelopeSchema,
  async handler(input, ctx) {
    if (!ctx.services.tasks) {
      throw new ApiError('service_indisponible', 'Le moteur des tâches n’est pas configuré (TEMPORAL_ADDRESS).');
    }
    if (input.webhook) {
      await ctx.services.outbound.checkUrl(input.webhook, { resolve: false }).catch((error: Error) => {
        throw invalidField('webhook', `Adresse refusée : ${error.message}`);
      });
      if (!(await subscriptionOfUrl(ctx.services.db, ctx.caller.organisationId, input.webhook))) {
        throw invalidField(
          'webhook',
          'Aucun abonnement actif à cette URL : créez-le par POST /webhooks (il donne le secret de signature).',
        );
      }
    }
    // The parcel is found before anything is reserved: an unknown one is a 404 of the request, not a failed task.
    await localiser(ctx.services.db, input);
    const { attendre: wait, webhook, ...task } = input;
    const { row, restants } = await createTask(
      { db: ctx.services.db, engine: ctx.services.tasks },
      {
        operation: 'preparer_dossier',
        caller: ctx.caller,
        input: task,
        credits: 200,
        webhook: webhook ?? null,
        clientKey: ctx.idempotencyKey ?? null,
      },
    );
    const current = await waitFor(row, wait, ctx);
    return served(current, ctx, current === row && restants !== null ? restants : undefined);
  },
});

export const resultatPreparerDossier = defineOperation({
  tool: 'resultat_preparer_dossier',
  texteTiers: true,
  method: 'GET',
  path: '/urbanisme/dossiers/{tache}',
  summary: 'État et résultat d’une préparation de dossier',
  description: `L'enveloppe de la tâche \`preparer_dossier\` : statut, résultat complet une fois \`terminee\`, erreur si \`echouee\` (crédits alors rendus). \`attendre\` (0-60 s) attend la fin. Le bloc \`credits\` est celui de la tâche ; cette lecture ne coûte rien. Une tâche d'une autre organisation, ou expirée, est absente (404 \`ressource_absente\`).`,
  credits: 0,
  unit: 'appel',
  scope: 'urbanisme',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  timeoutS: 5,
  task: true,
  errors: ['ressource_absente'],
  input: z.object({ tache: z.string().min(1).max(100), attendre }),
  output: DossierEnvelopeSchema,
  async handler(input, ctx) {
    const row = await readTask(ctx.services.db, input.tache, ctx.caller.organisationId);
    if (!row || row.operation !== 'preparer_dossier')
      throw new ApiError('ressource_absente', `Aucune tâche ${input.tache}.`);
    return served(await waitFor(row, input.attendre, ctx), ctx);
  },
});

export const dossiersOperations = [coupesFacades, preparerDossier, resultatPreparerDossier];

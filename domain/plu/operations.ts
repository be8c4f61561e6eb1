import { z } from 'zod';
import { QualiteSchema } from '../qualite.ts';
import { CreditsSchema, defineOperation, type OperationContext } from '../catalogue.ts';
import { nombre } from '../entrees.ts';
import { ApiError, invalidField } from '../errors.ts';
import { balanceOf } from '../platform/ledger.ts';
import { createTask, envelopeOf, MAX_WAIT_S, readTask, taskEnvelopeSchema, type TaskRow } from '../taches/taches.ts';
import { subscriptionOfUrl } from '../webhooks/evenements.ts';
import { adresseParCle, rechercher } from '../adresses/resoudre.ts';
import { FORMES, NATURES_PROJET, THEMES } from './lecture.ts';

const RegleSchema = z.object({
  theme: z.enum(THEMES),
  objets: z.array(z.string()).describe('Constructions visées ; vide : toutes.'),
  secteurs: z.array(z.string()),
  exceptions: z.string().nullable(),
  forme: z.enum(FORMES),
  valeur: z.number().nullable(),
  unite: z.string().nullable(),
  diviseur: z.number().nullable().describe('Distance au moins égale à la hauteur divisée par ce nombre.'),
  minimum_m: z.number().nullable(),
  conditions: z.string().nullable(),
  mesure: z.string().nullable(),
  resume: z.string(),
  citation: z.string().describe('Texte exact du règlement, retrouvé par le service sur la page indiquée.'),
  article: z.string().nullable(),
  page: z.number().int().min(1).describe('Page du PDF (1 = première page).'),
  a_confirmer: z.boolean().describe('Citation trouvée hors du chapitre de la zone.'),
  reserves: z.array(z.string()),
  lien: z.string().nullable(),
  portee: z.enum(['specifique', 'generale']).nullable(),
});

const CitedSchema = {
  citation: z.string(),
  page: z.number().int().min(1),
  a_confirmer: z.boolean(),
  lien: z.string().nullable(),
};

export const PluResultSchema = z.object({
  adresse: z.object({
    libelle: z.string(),
    insee: z.string().nullable(),
    precision: z.enum(['numero', 'voie', 'lieu_dit', 'point', 'autre']),
    lat: z.number(),
    lon: z.number(),
  }),
  statut: z
    .enum(['lu', 'zone_absente', 'non_publie', 'scanne'])
    .describe(
      'lu : règlement lu ; zone_absente : aucune zone au point ; non_publie : aucun règlement publié pour la zone ; scanne : PDF sans texte.',
    ),
  message: z.string().nullable(),
  zone: z.object({
    code: z.string().nullable(),
    libelle: z.string().nullable(),
    type_document: z.string().nullable(),
    document: z.string().nullable(),
    approuve_le: z.string().nullable(),
  }),
  autres_zones: z.array(z.string()),
  reglement_url: z.string().nullable(),
  filtre: z.object({ themes: z.array(z.enum(THEMES)), nature_projet: z.enum(NATURES_PROJET).nullable() }),
  regles: z.array(RegleSchema),
  definitions: z.array(z.object({ terme: z.string(), resume: z.string(), ...CitedSchema })),
  renvois: z.array(z.object({ vers: z.string(), objet: z.string(), ...CitedSchema })),
  non_trouve: z.array(z.object({ theme: z.enum(THEMES), raison: z.string() })),
  citations_ecartees: z.number().int().min(0).describe('Citations du modèle introuvables dans le texte : écartées.'),
  lecture: z
    .object({
      modele: z.string().nullable(),
      extrait_le: z.string().nullable(),
      pages_pdf: z.number().int(),
      depuis_cache: z.boolean(),
    })
    .nullable(),
  limites: z.array(z.string()),
  qualite: QualiteSchema,
});

const PluEnvelopeSchema = taskEnvelopeSchema(PluResultSchema).extend({ credits: CreditsSchema });

const attendre = nombre(z.number().int().min(0).max(MAX_WAIT_S).default(0)).describe(
  'Secondes d’attente de la fin de la tâche (0-60) avant de répondre.',
);

const RESULT_PATH = (id: string) => `/api/v1/urbanisme/reglements/${id}`;

async function served(row: TaskRow, ctx: OperationContext, restants?: number | null) {
  const balance =
    restants !== undefined
      ? restants
      : ctx.caller.sandbox
        ? null
        : (await balanceOf(ctx.services.db, ctx.caller.organisationId, ctx.caller.cleId)).restants;
  const { envelope, credits } = envelopeOf(row, RESULT_PATH, balance);
  return { ...envelope, credits } as z.infer<typeof PluEnvelopeSchema>;
}

const PRECISION_OF = { numero: 'numero', voie: 'voie', lieu_dit: 'lieu_dit', commune: 'autre' } as const;

/** The point read: given as is, or the position of a BAN address (by key, or the best match of a text). */
async function pointOf(
  ctx: OperationContext,
  input: { lat?: number; lon?: number; cle_ban?: string; q?: string; code_postal?: string },
): Promise<{ lat: number; lon: number; adresse?: { libelle: string; insee: string; precision: string } }> {
  if (input.lat !== undefined && input.lon !== undefined) return { lat: input.lat, lon: input.lon };
  const found = input.cle_ban
    ? await adresseParCle(ctx.services.db, 'live', input.cle_ban)
    : (await rechercher(ctx.services.db, 'live', input.q!, input.code_postal ?? null, 1))[0];
  if (!found) {
    throw new ApiError(
      'adresse_introuvable',
      input.cle_ban ? `Clé BAN inconnue : ${input.cle_ban}.` : `Aucune adresse ne correspond à « ${input.q} ».`,
    );
  }
  return {
    lat: found.lat,
    lon: found.lon,
    adresse: { libelle: found.libelle, insee: found.insee, precision: PRECISION_OF[found.type] },
  };
}

async function waitFor(row: TaskRow, seconds: number, ctx: OperationContext): Promise<TaskRow> {
  if (seconds <= 0 || row.statut === 'terminee' || row.statut === 'echouee') return row;
  await ctx.services.taskEnds?.wait(row.id, seconds * 1000, ctx.signal);
  return (await readTask(ctx.services.db, row.id, ctx.caller.organisationId)) ?? row;
}

export const lirePlu = defineOperation({
  tool: 'lire_plu',
  texteTiers: true,
  method: 'POST',
  // A long read run as a task: the task is how the answer arrives, not a change of the caller's data.
  effect: 'lecture',
  path: '/urbanisme/reglements',
  summary: 'Règles écrites du PLU à un point, citations vérifiées',
  description: `Lit le règlement écrit (PDF) de la zone du PLU ou PLUi qui couvre le point et en donne les règles par thème, chacune avec sa valeur, son article, sa page et la **citation exacte, retrouvée par le service dans le texte du PDF** : une citation introuvable est écartée et comptée (\`citations_ecartees\`) ; trouvée hors du chapitre de la zone, la règle porte \`a_confirmer\`.

La réponse est une tâche : toujours 202 et \`Location\`, même quand la tâche a fini pendant \`attendre\` (0-60 s) ; \`tache.statut\` le dit, et l'enveloppe porte alors \`resultat\` (ou \`erreur\`). Les crédits (60) sont réservés au départ, débités au succès, rendus en cas d'échec ; rien n'est débité sans règle à lire (\`zone_absente\`, \`non_publie\`, \`scanne\`) ni pour un résultat identique servi dans les 24 h.

\`resultat.statut\` :
- \`lu\` : le règlement écrit de la zone a été lu ; \`regles\` en donne les règles par thème.
- \`zone_absente\` : aucune zone de PLU ou PLUi publiée ne couvre le point (commune au RNU, carte communale, document non publié).
- \`non_publie\` : la zone est connue mais le Géoportail de l'Urbanisme ne publie aucun règlement écrit pour elle (\`reglement_url\` null) : rien n'est lu ni affirmé. Ce statut s'ajoute à ceux de la spécification, qui réserve \`scanne\` au PDF sans texte : un règlement absent n'est pas un règlement numérisé, et le client n'a pas la même suite à donner (demander le règlement en mairie plutôt que le lire lui-même).
- \`scanne\` : le règlement publié est un PDF sans texte (numérisé) : aucune règle n'est affirmée ; \`lecture.pages_pdf\` dit sa taille.

Décisions :
- Le point est \`lat\`/\`lon\` s'il est donné, sinon la position de l'adresse BAN \`cle_ban\`, sinon celle de la meilleure adresse trouvée pour \`q\` (et \`code_postal\`) ; une adresse inconnue répond 404 \`adresse_introuvable\`, sans débit.
- Une zone déjà lue dans le même document (même contenu) vient du cache des lectures (\`lecture.depuis_cache\`), sans appel au modèle. Au plus \`MODEL_CONCURRENCY\` lectures par worker en même temps (2 par défaut) : au-delà, elles attendent leur tour.
- Le 202 part dès que la tâche et sa réservation sont enregistrées ; la tâche est lancée aussitôt à côté (et relancée par le service si celui-ci s'arrête entre les deux). Si le moteur des tâches refuse ce lancement, la tâche finit \`echouee\` avec l'erreur \`service_indisponible\` et ses crédits sont rendus : relancez-la plus tard. Sans moteur des tâches configuré, la requête répond 503 \`service_indisponible\`.
- \`Idempotency-Key\` : la même clé et le même corps (hors \`attendre\`) rendent la même tâche ; un autre corps avec la même clé répond 409 \`conflit\`.
- \`webhook\` : appelé à la fin de la tâche, signé avec le secret de l'abonnement de l'organisation à cette même URL (créez-le par \`POST /webhooks\`, il donne le secret) ; une URL sans abonnement actif est refusée (400). La livraison porte la tâche et \`resultat_url\`, pas le résultat.
- Le résultat est gardé ${7} jours après la création de la tâche (\`expire_le\`).`,
  credits: 60,
  unit: 'appel',
  scope: 'plu',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  timeoutS: 300,
  task: true,
  errors: ['adresse_introuvable', 'conflit', 'service_indisponible'],
  input: z
    .object({
      cle_ban: z.string().min(1).max(100).optional(),
      q: z.string().min(5).max(200).optional(),
      code_postal: z
        .string()
        .regex(/^\d{5}$/)
        .optional(),
      lat: z.number().min(-90).max(90).optional(),
      lon: z.number().min(-180).max(180).optional(),
      themes: z.array(z.enum(THEMES)).min(1).max(10).optional(),
      nature_projet: z.enum(NATURES_PROJET).optional(),
      attendre,
      webhook: z
        .url({ protocol: /^https?$/ })
        .max(500)
        .optional(),
    })
    .strict(),
  output: PluEnvelopeSchema,
  async handler(input, ctx) {
    if (!ctx.services.tasks) {
      throw new ApiError('service_indisponible', 'Le moteur des tâches n’est pas configuré (TEMPORAL_ADDRESS).');
    }
    if ((input.lat === undefined) !== (input.lon === undefined)) {
      throw invalidField(input.lat === undefined ? 'lat' : 'lon', 'lat et lon vont ensemble.');
    }
    if (input.lat === undefined && !input.cle_ban && !input.q) {
      throw invalidField('lat', 'Donnez un point (lat, lon), une clé BAN (cle_ban) ou une adresse (q).');
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
    const { attendre: wait, webhook, cle_ban: _cle, q: _q, code_postal: _cp, ...task } = input;
    const lieu = await pointOf(ctx, input);
    const { row, restants } = await createTask(
      { db: ctx.services.db, engine: ctx.services.tasks },
      {
        operation: 'lire_plu',
        caller: ctx.caller,
        input: { ...task, ...lieu },
        credits: 60,
        webhook: webhook ?? null,
        clientKey: ctx.idempotencyKey ?? null,
      },
    );
    const current = await waitFor(row, wait, ctx);
    return served(current, ctx, current === row && restants !== null ? restants : undefined);
  },
});

export const resultatLirePlu = defineOperation({
  tool: 'resultat_lire_plu',
  texteTiers: true,
  method: 'GET',
  path: '/urbanisme/reglements/{tache}',
  summary: 'État et résultat d’une lecture de PLU',
  description: `L'enveloppe de la tâche : statut, résultat complet une fois \`terminee\`, erreur si \`echouee\` (crédits alors rendus). \`attendre\` (0-60 s) attend la fin. Le bloc \`credits\` est celui de la tâche (réservés, débités ou rendus) ; cette lecture elle-même ne coûte rien. Une tâche d'une autre organisation, ou expirée, est absente (404 \`ressource_absente\`).`,
  credits: 0,
  unit: 'appel',
  scope: 'plu',
  tier: 'usage',
  sandbox: true,
  cacheS: 0,
  timeoutS: 5,
  task: true,
  errors: ['ressource_absente'],
  input: z.object({ tache: z.string().min(1).max(100), attendre }),
  output: PluEnvelopeSchema,
  async handler(input, ctx) {
    const row = await readTask(ctx.services.db, input.tache, ctx.caller.organisationId);
    if (!row || row.operation !== 'lire_plu') throw new ApiError('ressource_absente', `Aucune tâche ${input.tache}.`);
    const current = await waitFor(row, input.attendre, ctx);
    return served(current, ctx);
  },
});

export const pluOperations = [lirePlu, resultatLirePlu];

import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { CreditsSchema, defineOperation, type OperationContext } from '../catalogue.ts';
import { ApiError, invalidField } from '../errors.ts';
import { balanceOf } from '../platform/ledger.ts';
import { QualiteSchema } from '../qualite.ts';
import {
  appartientA,
  creerConversation,
  derniereQuestion,
  derniersMessages,
  enPublic,
  lireConversation,
  lireQuestion,
  listerConversations,
  supprimerSiSansQuestion,
  type ConversationComplete,
  type Proprietaire,
} from './conversations.ts';
import { APPELS_PAR_QUESTION, APPELS_PAR_TOUR } from './agent.ts';
import { PLAFOND_PAR_DEFAUT, PRIX_QUESTION, type QuestionDemandee } from './types.ts';

const COMMON = {
  scope: 'hub',
  tier: 'usage',
  sandbox: false,
  cacheS: 0,
  unit: 'appel',
} as const;

const FIL_SERVI = 200;

const ConversationSchema = z.object({
  id: z.uuid(),
  titre: z.string().nullable(),
  annonce_id: z.string().nullable(),
  projet_id: z.uuid().nullable(),
  epinglee: z.boolean(),
  cree_le: z.string(),
  maj_le: z.string().nullable(),
});

const ReponseHubSchema = z.object({
  reponse: z
    .string()
    .describe('Réponse en Markdown ; un chiffre qu’aucun outil n’a donné y est suivi de « [non vérifié] ».'),
  appels: z
    .array(
      z.object({
        outil: z.string(),
        entree: z.record(z.string(), z.unknown()),
        resultat: z.unknown().describe('Sortie de l’opération (sans son bloc credits) ; null en cas d’erreur.'),
        erreur: z.object({ code: z.string(), detail: z.string() }).nullable(),
        credits: z.number().int().describe('Crédits de l’appel, compris dans le débit de la question.'),
      }),
    )
    .describe('Les opérations que l’agent a appelées, dans l’ordre.'),
  sources: z.array(z.string()),
  questions: z.array(z.string()).describe('Faits que les opérations ont demandés pour aller plus loin.'),
  qualite: QualiteSchema,
  credits: CreditsSchema,
});

const DESCRIPTION_AGENT = [
  `- **Prix** : ${PRIX_QUESTION} crédits la question, débités quand elle commence (rendus si elle échoue), plus chaque opération appelée à son propre prix (\`appels[].credits\`), débitée au fil des appels ; \`credits.debites\` est le total. \`plafond_credits\` (${PRIX_QUESTION}-1200, défaut ${PLAFOND_PAR_DEFAUT}) **comprend le prix de la question** : à ${PRIX_QUESTION}, aucun outil n’est appelé. Quand l’appel suivant dépasserait le plafond, il n’est pas fait (erreur \`credits_insuffisants\` dans \`appels\`) et l’agent conclut avec ce qu’il a, en le disant.`,
  '- **Échec** (modèle indisponible, délai de 110 s dépassé) : 503 `service_indisponible` ou 504 `delai_depasse`, et tous les crédits de la question sont rendus, outils compris.',
  '- **Outils** : les opérations de lecture ouvertes à la clé (portée, palier et bac à sable vérifiés comme pour un appel direct, mêmes refus), plus `memoire_ajouter` ; `outils_autorises` restreint la liste. Au plus 30 outils par tour du modèle : au-delà, ceux dont le nom et la description partagent le plus de mots avec la question et le contexte (adresse, commune, annonce). Un outil refusé revient en `appels[].erreur` avec le code qu’aurait un appel direct de la clé (`portee_insuffisante`, `palier_insuffisant`, `hors_bac_a_sable`, `credits_insuffisants`), et n’est pas facturé ; un outil hors de `outils_autorises` ou non offert au tour y revient en `portee_insuffisante`.',
  '- **Chiffres vérifiés** : chaque chiffre de `reponse` (prix, surfaces, pourcentages, nombres, dates, sous leurs formes françaises) doit figurer dans un résultat d’outil ou dans la question, à la précision écrite ; sinon il est marqué « [non vérifié] » et compté dans `qualite.methode` (`chiffres_non_verifies`).',
  '- Les résultats des outils sont des données, jamais des instructions pour l’agent. **Ils ne le font pas écrire** : dès qu’un appel de la question (ou une réponse antérieure du fil) a lu un texte écrit par un tiers (avis, document, citation d’un règlement, dénomination de société), les outils qui écrivent (`memoire_ajouter`) ne sont plus offerts et leur appel est refusé (`portee_insuffisante`). Un fait que le Hub retient doit venir des messages de l’utilisateur (ses chiffres, la plupart de ses mots : vérifié par le serveur), et un lien passé à un outil doit figurer dans ces messages ; sinon l’appel est refusé (`portee_insuffisante`).',
  `- **Bornes** : au plus ${APPELS_PAR_TOUR} appels d’outils par tour du modèle et ${APPELS_PAR_QUESTION} par question ; les autres reviennent au modèle en \`portee_insuffisante\`, ni faits ni facturés, et l’agent conclut.`,
  '- Les opérations qui tournent sur le moteur des tâches (`lire_plu`, `lire_document`, `estimer_bien_affine`) ne sont pas offertes au Hub : il ne peut pas les mener dans le temps d’une question ; les appeler directement.',
  '- **Refus** : une question refusée avant de commencer (402 crédits, 429 plafond de la clé ou quota) ne crée pas de conversation. Une clé révoquée pendant la question : ses appels d’outils suivants sont refusés (`cle_invalide`) et la question se conclut avec ce qu’elle a, au prix débité à son début.',
  '- Une conversation est un fil : les questions qui y arrivent en même temps sont répondues l’une après l’autre, dans l’ordre d’arrivée.',
].join('\n');

/** The key's personal account, or its organisation for an organisation key: who the conversations belong to. */
const proprietaireDe = (ctx: OperationContext): Proprietaire => ({
  organisationId: ctx.caller.organisationId,
  compteId: ctx.caller.compteId,
});

/** The conversation of this key's owner, else 404 (someone else's conversation is not revealed). */
async function conversationDuProprietaire(ctx: OperationContext, id: string): Promise<ConversationComplete> {
  const conversation = await lireConversation(ctx.services.db, id);
  if (!conversation || !appartientA(conversation, proprietaireDe(ctx))) {
    throw new ApiError('ressource_absente', 'Conversation introuvable.');
  }
  return conversation;
}

/** Asks the question in the conversation and serves its answer, as the workflow recorded it. */
async function poser(
  ctx: OperationContext,
  conversation: { id: string; compteId: string | null },
  input: { question: string; outils_autorises?: string[]; plafond_credits?: number; memoire?: boolean },
) {
  const hub = ctx.services.hub;
  if (!hub) throw new ApiError('service_indisponible', 'Le Hub n’est pas disponible (moteur de tâches absent).');
  const { db } = ctx.services;
  const demande: QuestionDemandee = {
    organisationId: ctx.caller.organisationId,
    compteId: conversation.compteId,
    cleId: ctx.caller.cleId,
    requete: ctx.requestId,
    question: input.question,
    outilsAutorises: input.outils_autorises ?? null,
    plafondCredits: input.plafond_credits ?? PLAFOND_PAR_DEFAUT,
    // An organisation key has neither profile nor memory: nothing to leave out.
    memoire: conversation.compteId !== null && (input.memoire ?? true),
    // What the conversation's validator checks before the question enters its history.
    restants: (await balanceOf(db, ctx.caller.organisationId, ctx.caller.cleId)).restants,
  };
  const numero = await hub.poser({ ...conversation, dernier: () => derniereQuestion(db, conversation.id) }, demande);
  const question = await lireQuestion(db, conversation.id, numero);
  if (!question?.reponse) throw new ApiError('service_indisponible', 'La réponse de la question est introuvable.');
  return question.reponse as z.infer<typeof ReponseHubSchema>;
}

/** The fields of a question, for a catalogue whose tools are `outils` (the names `outils_autorises` accepts). */
function questionFieldsFor(outils: readonly string[]) {
  return {
    question: z.string().min(3).max(4000),
    outils_autorises: z
      .array(z.enum(outils as [string, ...string[]]))
      .min(1)
      .max(100)
      .optional()
      .describe(
        'Les seuls outils que la question peut appeler, par leur nom au catalogue ; un nom inconnu est refusé.',
      ),
    plafond_credits: z.number().int().min(PRIX_QUESTION).max(1200).optional(),
  };
}
type QuestionFields = ReturnType<typeof questionFieldsFor>;

const questionHub = (questionFields: QuestionFields) =>
  defineOperation({
    ...COMMON,
    tool: 'question_hub',
    method: 'POST',
    path: '/hub/questions',
    credits: PRIX_QUESTION,
    timeoutS: 120,
    ownCredits: true,
    // Each question opens a conversation.
    effect: 'ajout',
    summary: 'Poser une question au Hub',
    description: [
      'Une question libre à l’agent du Hub, qui enchaîne les opérations de lecture du catalogue ouvertes à la clé puis rédige sa réponse. Ouvre une conversation (à lire et poursuivre avec `conversations_hub_lire` et `conversations_hub_question`). Toute clé de portée `hub` pose ses questions. Avec une clé personnelle, le profil d’investisseur, la mémoire du compte et le projet désigné entrent dans le contexte (sauf `memoire: false`), et la conversation appartient au compte. Avec une clé d’organisation (rattachée à aucun compte), la question est posée sans profil ni mémoire (`memoire` est alors sans effet), `contexte.projet_id` est refusé (400 : un projet appartient à un compte), et la conversation appartient à l’organisation : ses clés d’organisation la voient, aucune clé personnelle.',
      '',
      DESCRIPTION_AGENT,
    ].join('\n'),
    input: z.object({
      ...questionFields,
      contexte: z
        .object({
          projet_id: z.uuid().optional(),
          annonce: z.string().min(3).max(200).optional(),
          cle_ban: z.string().min(1).max(100).optional(),
          insee: z
            .string()
            .regex(/^(\d{5}|2[AB]\d{3})$/)
            .optional(),
        })
        .optional(),
      memoire: z.boolean().optional(),
    }),
    output: ReponseHubSchema,
    async handler(input, ctx) {
      const proprietaire = proprietaireDe(ctx);
      if (input.contexte?.projet_id && !proprietaire.compteId) {
        throw invalidField(
          'contexte.projet_id',
          'Un projet appartient à un compte personnel : clé personnelle requise.',
        );
      }
      const id = randomUUID();
      await creerConversation(ctx.services.db, {
        id,
        ...proprietaire,
        question: input.question,
        contexte: input.contexte ?? {},
      });
      try {
        return await poser(ctx, { id, compteId: proprietaire.compteId }, input);
      } catch (error) {
        // A question refused before it ran (402, 429) leaves no conversation holding only its question.
        await supprimerSiSansQuestion(ctx.services.db, id);
        throw error;
      }
    },
  });

const conversationsHubQuestion = (questionFields: QuestionFields) =>
  defineOperation({
    ...COMMON,
    tool: 'conversations_hub_question',
    method: 'POST',
    path: '/hub/conversations/{id}/questions',
    credits: PRIX_QUESTION,
    timeoutS: 120,
    ownCredits: true,
    // Each question adds to the thread.
    effect: 'ajout',
    summary: 'Poursuivre une conversation du Hub',
    errors: ['ressource_absente'],
    description: [
      'Pose une nouvelle question dans une conversation : l’agent reprend le fil (ses derniers messages), l’annonce suivie et le projet de la conversation ; l’échange y est enregistré. Une conversation d’un autre propriétaire (un autre compte, ou l’organisation pour une clé personnelle et inversement) répond 404.',
      '',
      DESCRIPTION_AGENT,
    ].join('\n'),
    input: z.object({ id: z.uuid(), ...questionFields }),
    output: ReponseHubSchema.extend({ conversation_id: z.uuid() }),
    async handler(input, ctx) {
      const conversation = await conversationDuProprietaire(ctx, input.id);
      const { id: _id, ...question } = input;
      const reponse = await poser(ctx, conversation, question);
      return { conversation_id: conversation.id, ...reponse };
    },
  });

const conversationsHub = defineOperation({
  ...COMMON,
  tool: 'conversations_hub',
  method: 'GET',
  path: '/hub/conversations',
  credits: 0,
  timeoutS: 3,
  summary: 'Lister les conversations du Hub',
  description:
    'Les conversations du compte personnel de la clé (d’une clé d’organisation : celles de l’organisation), la plus récemment modifiée d’abord ; `projet_id` et `epinglees` filtrent, `curseur` donne la page suivante.',
  input: z.object({
    projet_id: z.uuid().optional(),
    epinglees: z.stringbool().optional(),
    limite: z.coerce.number().int().min(1).max(50).default(20),
    curseur: z.string().min(1).max(1024).optional(),
  }),
  output: z.object({ conversations: z.array(ConversationSchema), curseur_suivant: z.string().nullable() }),
  async handler(input, ctx) {
    const proprietaire = proprietaireDe(ctx);
    const { curseur, limite, ...filtre } = input;
    const scope = `conversations_hub|${proprietaire.compteId ?? proprietaire.organisationId}|${JSON.stringify(filtre)}`;
    let apres: [string, string] | null = null;
    if (curseur) {
      apres = ctx.services.cursors.decode<[string, string]>(scope, curseur);
      if (!Array.isArray(apres) || apres.length !== 2) {
        throw invalidField('curseur', 'Curseur invalide : altéré, ou émis pour une autre liste.', 'requete');
      }
    }
    const page = await listerConversations(
      ctx.services.db,
      proprietaire,
      { projetId: filtre.projet_id, epinglees: filtre.epinglees },
      limite,
      apres,
    );
    return {
      conversations: page.conversations,
      curseur_suivant: page.suivante ? ctx.services.cursors.encode(scope, page.suivante) : null,
    };
  },
});

const conversationsHubLire = defineOperation({
  ...COMMON,
  tool: 'conversations_hub_lire',
  method: 'GET',
  path: '/hub/conversations/{id}',
  credits: 0,
  timeoutS: 4,
  summary: 'Lire une conversation du Hub',
  errors: ['ressource_absente'],
  description: `La conversation et ses ${FIL_SERVI} derniers messages au plus, dans l’ordre : questions de l’utilisateur et réponses du Hub, avec les outils sur lesquels chaque réponse repose (nom, entrée, résultat). Une conversation d’un autre propriétaire (un autre compte, ou l’organisation pour une clé personnelle et inversement) répond 404.`,
  input: z.object({ id: z.uuid() }),
  output: z.object({
    conversation: ConversationSchema,
    messages: z.array(
      z.object({
        rang: z.number().int(),
        role: z.enum(['user', 'assistant']),
        contenu: z.string(),
        outils: z.array(z.object({ nom: z.string(), entree: z.unknown(), resultat: z.unknown() })),
      }),
    ),
  }),
  async handler(input, ctx) {
    const conversation = await conversationDuProprietaire(ctx, input.id);
    return {
      conversation: enPublic(conversation),
      messages: await derniersMessages(ctx.services.db, conversation.id, FIL_SERVI),
    };
  },
});

/**
 * The Hub's operations, for a catalogue whose tools are `outils`: the operations that are tools, less the Hub's own,
 * which a question never calls.
 */
export function hubOperations(outils: readonly string[]) {
  const fields = questionFieldsFor(outils);
  return [questionHub(fields), conversationsHub, conversationsHubLire, conversationsHubQuestion(fields)];
}

import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  condition,
  continueAsNew,
  defineUpdate,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import {
  PRIX_QUESTION,
  type EchecQuestion,
  type EtatConversation,
  type QuestionDemandee,
} from '../domain/hub/types.ts';

/** A question put to a conversation; resolves with its number once it is answered (the answer is in PostgreSQL). */
export const poserQuestion = defineUpdate<number, [QuestionDemandee]>('poserQuestion');

// A conversation nobody asks anything for this long ends its workflow; a later question starts it again from what
// PostgreSQL holds (the thread, the number of the last question).
const INACTIVITE = '30 minutes';
// A question's own deadline, inside the operation's 120 s time-out.
const DELAI_QUESTION_MS = 110_000;
// Model turns of one question at most: the last one must answer with what the tools gave.
const TOURS_MAX = 6;
// Beyond this many events the history is handed on (continue-as-new) even if the server does not suggest it yet:
// a question costs a few dozen events (tool results and messages stay in PostgreSQL), so a run's history stays
// within this bound and one question's events, whatever the conversation's length.
export const HISTOIRE_MAX = 200;

const NON_REESSAYABLES = [
  'credits_insuffisants',
  'plafond_cle',
  'ressource_absente',
  'modele_non_configure',
  'modele_refus',
  'entree_invalide',
];

// Every step of a question is a local activity, run by the worker that runs the workflow, without a round trip
// through the Temporal server each: as regular activities a question of three turns took 2.5 times as long here
// (bench/RESULTS.md, "Hub agent overhead"). The steps are the model turns and the tool calls, no more: opening the
// question rides on its first turn and concluding it on the turn that answers, since each step costs the worker
// several milliseconds of scheduling whatever it does. Each is harmless to repeat (its writes are keyed; a model
// turn already answered is served from the database), as a local activity cut by a lost worker is run again once
// the workflow task times out.
// Steps over the database and the pipeline: quick, retried.
const etapes = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumAttempts: 5,
    nonRetryableErrorTypes: NON_REESSAYABLES,
  },
});
// A model turn: the openai client never retries (maxRetries 0); Temporal does, 4xx excepted, after the delay a 429
// asks for (the activity passes Retry-After on as the next retry's delay). Within the question's 120 s.
const modele = proxyLocalActivities<Activities>({
  startToCloseTimeout: '60 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumAttempts: 4,
    nonRetryableErrorTypes: NON_REESSAYABLES,
  },
});

function echecDe(error: unknown): EchecQuestion {
  const cause = error instanceof ApplicationFailure ? error : (error as { cause?: unknown }).cause;
  const failure = cause instanceof ApplicationFailure ? cause : null;
  const code = failure?.type ?? 'service_indisponible';
  // A model that cannot answer is the service being unavailable, for the client (503), whatever its exact kind.
  return {
    code: code.startsWith('modele_') ? 'service_indisponible' : code,
    detail: failure?.message ?? 'La question n’a pas pu aboutir ; aucun crédit n’a été débité.',
  };
}

/** One question, from the debit of its price to its answer; a failure gives every credit of it back. */
async function repondre(
  conversationId: string,
  numero: number,
  demande: QuestionDemandee,
): Promise<EchecQuestion | null> {
  const question = { conversationId, numero };
  try {
    // Within the operation's 120 s, with time to spare for the answer to reach the client: past it, the question
    // fails (its activities are cancelled) and gives its credits back, rather than being billed to a client who
    // was told it timed out.
    await CancellationScope.withTimeout(DELAI_QUESTION_MS, () => derouler(question, demande));
    return null;
  } catch (error) {
    const echec = isCancellation(error)
      ? {
          code: 'delai_depasse',
          detail: `La question dépasse ${DELAI_QUESTION_MS / 1000} s ; aucun crédit n’a été débité.`,
        }
      : echecDe(error);
    await etapes.echouerQuestionHub({ ...question, ...echec });
    return echec;
  }
}

/** The turns of a question and its tool calls, within its cap; the first turn opens it, the one that answers concludes it. */
async function derouler(question: { conversationId: string; numero: number }, demande: QuestionDemandee) {
  const qui = { cleId: demande.cleId, compteId: demande.compteId, memoire: demande.memoire };
  let depense = PRIX_QUESTION;
  let conclure = depense >= demande.plafondCredits;
  for (let tour = 1; ; tour += 1) {
    const joue = await modele.tourHub({
      ...question,
      tour,
      conclure: conclure || tour === TOURS_MAX,
      qui,
      ouverture: tour === 1 ? demande : null,
    });
    if (joue.appels.length === 0) return;
    // The calls of a turn run one after the other, each within what the cap leaves after the ones before it: a
    // price per element is known only once the result is, and the cap must hold exactly.
    for (const { rang } of joue.appels) {
      const fait = await etapes.appelerOutilHub({ ...question, tour, rang, reste: demande.plafondCredits - depense });
      depense += fait.credits;
      if (fait.plafondAtteint) conclure = true;
    }
    if (depense >= demande.plafondCredits) conclure = true;
  }
}

/**
 * A conversation of the Hub, as an actor: its questions arrive as Updates and are answered one at a time, in the order
 * they arrived. The thread lives in PostgreSQL; the history carries only numbers and ranks.
 */
export async function conversationHub(etat: EtatConversation): Promise<void> {
  const attente: Array<{ numero: number; demande: QuestionDemandee }> = [];
  const issues = new Map<number, EchecQuestion | null>();
  let fermee = false;

  setHandler(
    poserQuestion,
    async (demande) => {
      etat.dernier += 1;
      const numero = etat.dernier;
      attente.push({ numero, demande });
      await condition(() => issues.has(numero));
      const echec = issues.get(numero);
      issues.delete(numero);
      if (echec) throw ApplicationFailure.create({ type: echec.code, message: echec.detail, nonRetryable: true });
      return numero;
    },
    {
      // What must not enter the history: a question to a conversation that is closing, someone else's, or one the
      // organisation cannot pay. Refused here, the Update leaves no trace.
      validator: (demande) => {
        if (fermee) throw ApplicationFailure.create({ type: 'conversation_fermee', message: 'Conversation fermée.' });
        if (demande.compteId !== etat.compteId) {
          throw ApplicationFailure.create({ type: 'ressource_absente', message: 'Conversation introuvable.' });
        }
        if (demande.restants !== null && demande.restants < PRIX_QUESTION) {
          throw ApplicationFailure.create({
            type: 'credits_insuffisants',
            message: `Il reste ${demande.restants} crédits ; une question en coûte ${PRIX_QUESTION}.`,
          });
        }
      },
    },
  );

  for (;;) {
    const arrivee = await condition(() => attente.length > 0, INACTIVITE);
    if (!arrivee) {
      fermee = true;
      await condition(allHandlersFinished);
      return;
    }
    while (attente.length > 0) {
      const { numero, demande } = attente.shift()!;
      issues.set(numero, await repondre(etat.conversationId, numero, demande));
    }
    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength > HISTOIRE_MAX) {
      // Only from here, once every answered question's handler has returned its number: none is lost on the way.
      await condition(() => allHandlersFinished() || attente.length > 0);
      if (attente.length === 0) await continueAsNew<typeof conversationHub>(etat);
    }
  }
}

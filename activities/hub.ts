import { ApplicationFailure, Context } from '@temporalio/activity';
import type { PoolClient } from 'pg';
import { transaction, type Db } from '../db/client.ts';
import { lireMemoire, lireProfil } from '../domain/compte/operations.ts';
import { ApiError } from '../domain/errors.ts';
import {
  APPELS_PAR_QUESTION,
  APPELS_PAR_TOUR,
  appuyeParLUtilisateur,
  choisirOutils,
  FIL_VU,
  liensDe,
  messageSysteme,
  messagesDuFil,
  OUTIL_MEMOIRE,
  questionsOuvertes,
  resultatPourModele,
  sourcesDe,
} from '../domain/hub/agent.ts';
import { verifierChiffres } from '../domain/hub/chiffres.ts';
import {
  ajouterMessage,
  lireConversation,
  lireQuestion,
  type ConversationComplete,
  type MessageHub,
  type QuestionHub,
} from '../domain/hub/conversations.ts';
import {
  PRIX_QUESTION,
  type AppelFait,
  type QuestionDemandee,
  type TourDemande,
  type TourJoue,
} from '../domain/hub/types.ts';
import type { Invocation } from '../domain/invoke.ts';
import { debit } from '../domain/platform/ledger.ts';
import { ModelError, type Model, type ModelMessage, type ModelTool } from '../lib/model.ts';
import { modelFailure } from './shared.ts';

/** What the Hub's steps need: the pipeline every caller uses, and the tools a key may be offered. */
export interface HubDeps {
  db: Db;
  model: Model | null;
  /** Runs one operation for a key, as HTTP would (null: the worker cannot run tools). */
  invoke:
    | ((
        cleId: string,
        tool: string,
        input: unknown,
        options: { billingKey: string; creditCap: number; requestId: string },
      ) => Promise<Invocation>)
    | null;
  /** The tools the Hub may offer a key's questions: the read operations it may call, and the memory. */
  outils: (cleId: string) => Promise<ModelTool[]>;
  /** Why a tool the question was not offered is refused: the code a direct call would get, and its detail. */
  refus: (cleId: string, tool: string, autorises: string[] | null) => Promise<{ code: string; detail: string }>;
  /** Whether a tool writes, and whether its output holds text a third party wrote. */
  nature: (tool: string) => { ecrit: boolean; texteTiers: boolean };
}

type Erreur = { code: string; detail: string };

const ecritureApresTiers = (outil: string): Erreur => ({
  code: 'portee_insuffisante',
  detail: `« ${outil} » écrit : après la lecture d’un texte écrit par un tiers (avis, document…), la question n’écrit plus rien ; l’utilisateur peut le demander dans une nouvelle question.`,
});

/**
 * Why a call the model asks for is not run, beyond what a direct call would be refused for: the bounds of a turn
 * and of a question, a write after third-party text was read, a link or a fact the asker did not give.
 */
function garde(
  deps: HubDeps,
  appel: { outil: string; entree: unknown; rang: number },
  q: { dejaFaits: number; tiersLu: boolean; paroles: string },
): Erreur | null {
  if (appel.rang > APPELS_PAR_TOUR || q.dejaFaits + appel.rang > APPELS_PAR_QUESTION) {
    return {
      code: 'portee_insuffisante',
      detail: `Au plus ${APPELS_PAR_TOUR} appels par tour et ${APPELS_PAR_QUESTION} par question : cet appel n’est pas fait ; conclus avec ce que les outils ont donné.`,
    };
  }
  if (q.tiersLu && deps.nature(appel.outil).ecrit) return ecritureApresTiers(appel.outil);
  const lien = liensDe(appel.entree).find((l) => !q.paroles.includes(l));
  if (lien) {
    return {
      code: 'portee_insuffisante',
      detail: `Le lien « ${lien.slice(0, 200)} » n’est pas dans les messages de l’utilisateur : le Hub ne suit que les liens qu’il a donnés.`,
    };
  }
  if (appel.outil === OUTIL_MEMOIRE) {
    const faits = (appel.entree as { faits?: unknown }).faits;
    const etranger = Array.isArray(faits)
      ? faits.find((f) => typeof f === 'string' && !appuyeParLUtilisateur(f, q.paroles))
      : undefined;
    if (typeof etranger === 'string') {
      return {
        code: 'portee_insuffisante',
        detail: `Le fait « ${etranger.slice(0, 200)} » n’est pas dans les messages de l’utilisateur (ses chiffres, ses mots) : le Hub ne retient que ce que l’utilisateur a écrit.`,
      };
    }
  }
  return null;
}

interface Question {
  conversationId: string;
  numero: number;
}

/** The ledger key of a question's price; its tools' keys and its give-back extend it. */
const cleQuestion = ({ conversationId, numero }: Question) => `hub:${conversationId}:${numero}`;

function echecModele(error: unknown): unknown {
  return error instanceof ModelError ? modelFailure(error, `Modèle : ${error.message}`) : error;
}

interface LigneAppel {
  tour: number;
  rang: number;
  appel_id: string;
  outil: string;
  entree: unknown;
  resultat: unknown;
  erreur: { code: string; detail: string } | null;
  credits: number;
  fait_le: Date | null;
}

async function appelsDe(db: Db, q: Question): Promise<LigneAppel[]> {
  const { rows } = await db.query<LigneAppel>(
    `SELECT tour, rang, appel_id, outil, entree, resultat, erreur, credits, fait_le FROM appels_hub
      WHERE conversation_id = $1 AND numero = $2 ORDER BY tour, rang`,
    [q.conversationId, q.numero],
  );
  return rows;
}

/** What concluding a question rests on: the question, its conversation, its calls, what the model was shown. */
interface Conclusion {
  question: QuestionHub;
  conversation: ConversationComplete | null;
  appels: LigneAppel[];
  /** The profile and the memory the model was shown (none with `memoire: false`). */
  donne: unknown[];
  /** The model's answer. */
  texte: string;
}

/** The text of an assistant message as this module writes it (a string, or null beside tool calls). */
const texteDe = (message: ModelMessage) => (typeof message.content === 'string' ? message.content : '');

/** The calls of a turn, by rank. */
const joueDe = (appels: LigneAppel[], tour: number): TourJoue => ({
  appels: appels.filter((a) => a.tour === tour).map((a) => ({ rang: a.rang })),
});

/**
 * A write of a question's progress (its opening, a turn, a call's result), committed without waiting for the disk
 * (synchronous_commit off): a question writes half a dozen of them, each flush a few milliseconds here. Its answer
 * is settled with the wait, and the write-ahead log reaches the disk in order, so all of them are durable before the
 * answer is served. A database crash in between loses steps of an unanswered question, its debit with its opening
 * (one transaction): the question then fails, and nothing is served that was not billed.
 */
function progression<T>(db: Db, work: (client: PoolClient) => Promise<T>): Promise<T> {
  return transaction(db, async (client) => {
    await client.query('SET LOCAL synchronous_commit = off');
    return work(client);
  });
}

export function createHubActivities(deps: HubDeps) {
  const { db } = deps;

  /** Writes the question and its user message, and debits its price: once, whatever the retries. */
  async function ouvrir(q: Question, demande: QuestionDemandee): Promise<void> {
    await progression(db, async (client) => {
      await client.query(
        `INSERT INTO questions_hub (conversation_id, numero, cle_id, question, options) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING`,
        [q.conversationId, q.numero, demande.cleId, demande.question, demande],
      );
      await ajouterMessage(client, { ...q, role: 'user', contenu: demande.question });
      const prix = await debit(client, {
        organisationId: demande.organisationId,
        cleId: demande.cleId,
        genre: 'debit',
        credits: PRIX_QUESTION,
        operation: 'question_hub',
        requete: demande.requete,
        idempotence: cleQuestion(q),
      });
      if (prix.issue === 'credits_insuffisants' || prix.issue === 'plafond_cle') {
        const detail =
          prix.issue === 'plafond_cle'
            ? 'Plafond mensuel de la clé atteint.'
            : `Il reste ${prix.restants} crédits ; une question en coûte ${PRIX_QUESTION}.`;
        throw ApplicationFailure.create({ type: prix.issue, message: detail, nonRetryable: true });
      }
    });
  }

  /** The answer checked (every figure against the tools' results and the question), served, settled, recorded. */
  async function conclure(q: Question, c: Conclusion): Promise<void> {
    if (c.question.statut !== 'en_cours') return;
    const appels = c.appels.map((a) => ({
      outil: a.outil,
      entree: a.entree,
      resultat: a.erreur ? null : a.resultat,
      erreur: a.erreur,
      credits: a.credits,
    }));
    // What the model was given counts as a source too: the context, the profile and the memory it was shown.
    const verification = verifierChiffres(c.texte, {
      question: c.question.question,
      resultats: [...appels.filter((a) => !a.erreur).map((a) => a.resultat), c.conversation?.contexte, ...c.donne],
    });
    const sources = sourcesDe(appels);
    const reussis = appels.filter((a) => !a.erreur).length;
    await transaction(db, async (client) => {
      const regle = await client.query<{ debites: number; restants: string }>(
        'SELECT * FROM svc_regler_question_hub($1, $2, true)',
        [q.conversationId, q.numero],
      );
      const { debites, restants } = regle.rows[0]!;
      const reponse = {
        reponse: verification.texte,
        appels,
        sources,
        questions: questionsOuvertes(appels),
        qualite: {
          n: reussis,
          provenance: null,
          incertitude: null,
          drapeaux: [],
          methode:
            `Réponse rédigée par le modèle ${deps.model?.name ?? ''} à partir de ${reussis} appel(s) d’outils réussi(s). ` +
            `Chiffres vérifiés par le serveur contre les résultats des outils et la question : ${verification.chiffres} relevé(s), ` +
            `chiffres_non_verifies ${verification.non_verifies} (marqués dans le texte).`,
          donnees_du: new Date().toISOString(),
          source: sources.length > 0 ? sources.join(' ; ') : 'aucun outil appelé',
        },
        credits: { debites, restants: Number(restants) },
      };
      await client.query(
        `UPDATE questions_hub SET statut = 'repondue', reponse = $3, credits = $4, repondue_le = now()
          WHERE conversation_id = $1 AND numero = $2`,
        [q.conversationId, q.numero, reponse, debites],
      );
      await ajouterMessage(client, {
        ...q,
        role: 'assistant',
        contenu: verification.texte,
        outils: appels.filter((a) => !a.erreur).map((a) => ({ nom: a.outil, entree: a.entree, resultat: a.resultat })),
      });
    });
  }

  return {
    /**
     * One model turn: the thread, the question, the turns before it with their tools' results, and the tools of
     * this question. Written once: a retried turn after the model answered serves what it answered. The first turn
     * opens the question; a turn that answers (no tool call) concludes it.
     */
    async tourHub(args: TourDemande): Promise<TourJoue> {
      const { qui } = args;
      if (args.ouverture) await ouvrir(args, args.ouverture);
      // Independent reads, at once: each is a round trip, and a turn is on every question's path.
      const [question, conversation, fil, tours, appels, profil, memoire, candidats] = await Promise.all([
        lireQuestion(db, args.conversationId, args.numero),
        lireConversation(db, args.conversationId),
        db.query<MessageHub>(
          `SELECT rang, role, contenu, outils FROM (
             SELECT rang, role, contenu, outils FROM messages_hub WHERE conversation_id = $1 AND numero < $2
              ORDER BY rang DESC LIMIT $3) m ORDER BY rang`,
          [args.conversationId, args.numero, FIL_VU],
        ),
        db.query<{ tour: number; message: ModelMessage }>(
          'SELECT tour, message FROM tours_hub WHERE conversation_id = $1 AND numero = $2 AND tour <= $3 ORDER BY tour',
          [args.conversationId, args.numero, args.tour],
        ),
        appelsDe(db, args),
        qui.memoire && qui.compteId ? lireProfil(db, qui.compteId) : null,
        qui.memoire && qui.compteId ? lireMemoire(db, qui.compteId) : null,
        deps.outils(qui.cleId),
      ]);
      if (!question || !conversation) {
        throw ApplicationFailure.create({
          type: 'ressource_absente',
          message: 'Question absente.',
          nonRetryable: true,
        });
      }
      const donne = [profil, memoire].filter((d) => d !== null);
      const dejaJoue = tours.rows.find((t) => t.tour === args.tour);
      if (dejaJoue) {
        const joue = joueDe(appels, args.tour);
        if (joue.appels.length === 0) {
          await conclure(args, { question, conversation, appels, donne, texte: texteDe(dejaJoue.message) });
        }
        return joue;
      }
      if (!deps.model) {
        throw ApplicationFailure.create({
          type: 'modele_non_configure',
          message: 'Aucun modèle configuré (OPENAI_MODEL).',
          nonRetryable: true,
        });
      }
      const { demande } = question;
      const messages: ModelMessage[] = [
        {
          role: 'system',
          content: messageSysteme({ contexte: conversation.contexte, profil, memoire, conclure: args.conclure }),
        },
        ...messagesDuFil(fil.rows, demande.question),
      ];
      for (const t of tours.rows) {
        messages.push(t.message);
        for (const a of appels.filter((x) => x.tour === t.tour)) {
          messages.push({
            role: 'tool',
            tool_call_id: a.appel_id,
            content: resultatPourModele(a.outil, a.resultat, a.erreur),
          });
        }
      }
      // Text a third party wrote, read by this question's calls or by the thread's earlier answers: from then on the
      // model is offered nothing that writes.
      const tiersLu =
        appels.some((a) => !a.erreur && deps.nature(a.outil).texteTiers) ||
        fil.rows.some((m) => (m.outils ?? []).some((o) => deps.nature(o.nom).texteTiers));
      const offrables = tiersLu ? candidats.filter((t) => !deps.nature(t.name).ecrit) : candidats;
      const outils = choisirOutils(offrables, demande.question, conversation.contexte, demande.outilsAutorises);
      // The question's calls are all made: the model answers with what it has.
      const conclureIci = args.conclure || appels.length >= APPELS_PAR_QUESTION;
      // What the asker wrote: the question and the thread's user messages, where links and facts must come from.
      const paroles = [...fil.rows.filter((m) => m.role === 'user').map((m) => m.contenu), demande.question].join('\n');
      let joue;
      try {
        joue = await deps.model.converse({
          messages,
          tools: outils,
          toolsAllowed: !conclureIci,
          // The question's deadline cancels its turn.
          signal: Context.current().cancellationSignal,
        });
      } catch (error) {
        throw echecModele(error);
      }
      // A model asked to conclude that still calls tools is not obeyed: its text is the answer.
      const demandes = conclureIci ? [] : joue.toolCalls;
      if (demandes.length === 0 && !joue.content?.trim()) {
        throw ApplicationFailure.create({ type: 'modele_indisponible', message: 'Modèle : réponse vide.' });
      }
      const offerts = new Set(outils.map((o) => o.name));
      const message: ModelMessage = {
        role: 'assistant',
        content: joue.content,
        ...(demandes.length > 0
          ? {
              tool_calls: demandes.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      };
      // Arguments are checked here, before anything runs: a tool the question was not offered, or arguments that
      // are not a JSON object, come back to the model as the call's error, never run, never billed.
      // A write asked for after third-party text was read is refused for that reason, whatever else would refuse it.
      const refus = await Promise.all(
        demandes.map((c) =>
          offerts.has(c.name)
            ? null
            : tiersLu && deps.nature(c.name).ecrit
              ? ecritureApresTiers(c.name)
              : deps.refus(qui.cleId, c.name, demande.outilsAutorises),
        ),
      );
      const lignes = demandes.map((c, i) => {
        let entree: unknown = null;
        let erreur: { code: string; detail: string } | null = refus[i] ?? null;
        if (!erreur) {
          try {
            entree = JSON.parse(c.arguments || '{}');
          } catch {
            erreur = { code: 'parametres_invalides', detail: 'Arguments illisibles : un objet JSON est attendu.' };
          }
          if (!erreur && (typeof entree !== 'object' || entree === null || Array.isArray(entree))) {
            erreur = { code: 'parametres_invalides', detail: 'Arguments : un objet JSON est attendu.' };
          }
        }
        erreur ??= garde(deps, { outil: c.name, entree, rang: i + 1 }, { dejaFaits: appels.length, tiersLu, paroles });
        return { rang: i + 1, appel_id: c.id, outil: c.name, entree: entree ?? {}, erreur };
      });
      // The turn and its calls in one statement (atomic as such): written once, by whichever attempt comes first.
      const ecrit = await progression(db, (client) =>
        client.query<{ ecrit: number }>(
          `WITH tour AS (
           INSERT INTO tours_hub (conversation_id, numero, tour, message) VALUES ($1, $2, $3, $4)
           ON CONFLICT DO NOTHING RETURNING 1),
         appels AS (
           INSERT INTO appels_hub (conversation_id, numero, tour, rang, appel_id, outil, entree, erreur, fait_le)
           SELECT $1, $2, $3, a.rang, a.appel_id, a.outil, a.entree, a.erreur,
                  CASE WHEN a.erreur IS NULL THEN NULL ELSE now() END
             FROM tour, jsonb_to_recordset($5::jsonb) AS a(rang int, appel_id text, outil text, entree jsonb, erreur jsonb))
         SELECT count(*)::int AS ecrit FROM tour`,
          [args.conversationId, args.numero, args.tour, message, JSON.stringify(lignes)],
        ),
      );
      if (ecrit.rows[0]!.ecrit === 0) {
        // Another attempt wrote this turn first: what it wrote stands.
        const [relu, tour] = await Promise.all([
          appelsDe(db, args),
          db.query<{ message: ModelMessage }>(
            'SELECT message FROM tours_hub WHERE conversation_id = $1 AND numero = $2 AND tour = $3',
            [args.conversationId, args.numero, args.tour],
          ),
        ]);
        const ecritAvant = joueDe(relu, args.tour);
        if (ecritAvant.appels.length === 0) {
          const texte = tour.rows[0] ? texteDe(tour.rows[0].message) : '';
          await conclure(args, { question, conversation, appels: relu, donne, texte });
        }
        return ecritAvant;
      }
      if (lignes.length === 0)
        await conclure(args, { question, conversation, appels, donne, texte: joue.content ?? '' });
      return { appels: lignes.map((l) => ({ rang: l.rang })) };
    },

    /**
     * One tool call, through the pipeline with the question's key: the key's scopes, tier and caps hold, the price is
     * the operation's, debited under a ledger key made of the conversation, the question, the turn and the call's
     * rank, so a retried call is never billed twice. Refusals are the call's error, not the question's.
     */
    async appelerOutilHub(args: Question & { tour: number; rang: number; reste: number }): Promise<AppelFait> {
      const [appels, question] = await Promise.all([
        appelsDe(db, args),
        lireQuestion(db, args.conversationId, args.numero),
      ]);
      const appel = appels.find((a) => a.tour === args.tour && a.rang === args.rang);
      if (!appel)
        throw ApplicationFailure.create({ type: 'ressource_absente', message: 'Appel absent.', nonRetryable: true });
      if (appel.fait_le)
        return { credits: appel.credits, plafondAtteint: appel.erreur?.code === 'credits_insuffisants' };
      if (!question || question.statut !== 'en_cours' || !deps.invoke) {
        throw ApplicationFailure.create({
          type: 'service_indisponible',
          message: 'Les outils du Hub ne peuvent pas être appelés.',
          nonRetryable: true,
        });
      }
      const cle = `${cleQuestion(args)}:${args.tour}:${args.rang}`;
      let resultat: unknown = null;
      let erreur: { code: string; detail: string } | null = null;
      if (args.reste <= 0) {
        erreur = { code: 'credits_insuffisants', detail: 'Le plafond de crédits de la question est atteint.' };
      } else {
        try {
          const reponse = await deps.invoke(question.demande.cleId, appel.outil, appel.entree, {
            billingKey: cle,
            creditCap: args.reste,
            requestId: `${question.demande.requete}_${args.tour}_${args.rang}`,
          });
          resultat = reponse.output;
        } catch (error) {
          if (!(error instanceof ApiError) || error.code === 'erreur_interne' || error.code === 'delai_depasse') {
            throw error;
          }
          erreur = { code: error.code, detail: error.message };
        }
      }
      // What the call cost is what the ledger holds under its key: an attempt that found its debit already written
      // (or an identical answer) is told 0, the ledger knows better.
      const { rows } = await progression(db, (client) =>
        client.query<{ credits: number }>(
          `UPDATE appels_hub a SET resultat = $5, erreur = $6, fait_le = now(),
                credits = coalesce(-m.credits, 0), cle_debit = m.cle_idempotence
           FROM (SELECT 1) x LEFT JOIN mouvements m ON m.cle_idempotence = $7
          WHERE a.conversation_id = $1 AND a.numero = $2 AND a.tour = $3 AND a.rang = $4
          RETURNING a.credits`,
          [args.conversationId, args.numero, args.tour, args.rang, JSON.stringify(resultat), erreur, cle],
        ),
      );
      const credits = rows[0]?.credits ?? 0;
      return { credits, plafondAtteint: erreur?.code === 'credits_insuffisants' };
    },

    /** A failed question: every credit of it given back (its price and its tools'), its error recorded. */
    async echouerQuestionHub(args: Question & { code: string; detail: string }): Promise<void> {
      const question = await lireQuestion(db, args.conversationId, args.numero);
      if (!question || question.statut !== 'en_cours') return;
      await transaction(db, async (client) => {
        await client.query('SELECT * FROM svc_regler_question_hub($1, $2, false)', [args.conversationId, args.numero]);
        await client.query(
          `UPDATE questions_hub SET statut = 'echouee', erreur = $3, credits = 0, repondue_le = now()
            WHERE conversation_id = $1 AND numero = $2`,
          [args.conversationId, args.numero, { code: args.code, detail: args.detail }],
        );
      });
    },
  };
}

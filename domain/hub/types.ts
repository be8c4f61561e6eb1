// What the API, the conversation workflow and its activities pass each other. Types only: the workflow bundle
// imports nothing of Node from here.

/** The price of a question, debited when it starts (given back if it fails); its tools are billed on top, within `plafond_credits`. */
export const PRIX_QUESTION = 120;
/** `plafond_credits` when the question gives none: the question and up to 480 credits of tools. */
export const PLAFOND_PAR_DEFAUT = 600;

/** A question as the API hands it to its conversation. */
export interface QuestionDemandee {
  organisationId: string;
  /** The key's personal account; null for an organisation key (no profile, memory nor project then). */
  compteId: string | null;
  cleId: string;
  /** The request's id (`requete` of the question's debit). */
  requete: string;
  question: string;
  /** The tools the question may use (absent: the read operations served to the key). */
  outilsAutorises: string[] | null;
  /** What the question may cost in all, its price included. */
  plafondCredits: number;
  /** false: neither the investor profile nor the memory enter the context. */
  memoire: boolean;
  /** Credits the organisation had left when the question was asked (null: not counted). */
  restants: number | null;
}

/** The state a conversation's workflow carries, and hands on when it continues as new. */
export interface EtatConversation {
  conversationId: string;
  /** The personal account that owns the conversation (null: the organisation's own): nobody else's question enters it. */
  compteId: string | null;
  /** The number of the last question asked (questions are numbered from 1 in arrival order). */
  dernier: number;
}

/**
 * A model turn as the workflow asks for it. The first opens the question (its row, its user message, the debit of
 * its price); the one that answers concludes it (the answer checked, settled, recorded). Who asks comes with every
 * turn, so that a turn's reads all go out at once.
 */
export interface TourDemande {
  conversationId: string;
  numero: number;
  tour: number;
  /** The model must answer now, with no more tools (cap reached or last turn). */
  conclure: boolean;
  qui: Pick<QuestionDemandee, 'cleId' | 'compteId' | 'memoire'>;
  /** The question itself, on the first turn only (the history carries it once). */
  ouverture: QuestionDemandee | null;
}

/** A tool call the model asked for in a turn, by its rank. */
export interface AppelPrevu {
  rang: number;
}

/** A model turn: the calls it asks for (none: it has answered). */
export interface TourJoue {
  appels: AppelPrevu[];
}

/** What a tool call cost, and whether the question's cap stopped it. */
export interface AppelFait {
  credits: number;
  plafondAtteint: boolean;
}

/** Why a question failed, as its problem says it. */
export interface EchecQuestion {
  code: string;
  detail: string;
}

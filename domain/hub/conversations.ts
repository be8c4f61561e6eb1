import type { Queryable } from '../../db/client.ts';
import type { QuestionDemandee } from './types.ts';

/** A conversation as conversations_hub lists it. */
export interface Conversation {
  id: string;
  titre: string | null;
  annonce_id: string | null;
  projet_id: string | null;
  epinglee: boolean;
  cree_le: string;
  maj_le: string | null;
}

/** The context a conversation was opened with (`contexte` of question_hub). */
export interface ContexteHub {
  projet_id?: string;
  annonce?: string;
  cle_ban?: string;
  insee?: string;
}

interface LigneConversation {
  id: string;
  organisation_id: string;
  compte_id: string | null;
  titre: string | null;
  annonce_id: string | null;
  projet_id: string | null;
  epinglee: boolean;
  contexte: ContexteHub;
  cree_le: Date;
  maj_le: Date | null;
}

/**
 * Who a conversation belongs to: the personal account of the key that opened it, or, for an organisation key (attached
 * to no account), the organisation itself. Nobody else sees it.
 */
export interface Proprietaire {
  organisationId: string;
  /** null: the organisation's own conversation. */
  compteId: string | null;
}

export type ConversationComplete = Conversation & Proprietaire & { contexte: ContexteHub };

/** Whether the conversation belongs to this owner (an account's is never the organisation's, nor the reverse). */
export function appartientA(c: ConversationComplete, p: Proprietaire): boolean {
  return c.compteId === p.compteId && (c.compteId !== null || c.organisationId === p.organisationId);
}

/** The rows of an owner's conversations, as a condition on `conversations_hub` and its parameter ($1). */
function ligneDe(p: Proprietaire): [string, string] {
  return p.compteId ? ['compte_id = $1', p.compteId] : ['organisation_id = $1 AND compte_id IS NULL', p.organisationId];
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function conversationDe(r: LigneConversation): ConversationComplete {
  return {
    id: r.id,
    titre: r.titre,
    annonce_id: r.annonce_id,
    projet_id: r.projet_id,
    epinglee: r.epinglee,
    cree_le: r.cree_le.toISOString(),
    maj_le: iso(r.maj_le),
    compteId: r.compte_id,
    organisationId: r.organisation_id,
    contexte: r.contexte,
  };
}

/** Public fields only: what the API serves of a conversation. */
export function enPublic(c: ConversationComplete): Conversation {
  return {
    id: c.id,
    titre: c.titre,
    annonce_id: c.annonce_id,
    projet_id: c.projet_id,
    epinglee: c.epinglee,
    cree_le: c.cree_le,
    maj_le: c.maj_le,
  };
}

/** A new conversation; its title is the start of its first question. */
export async function creerConversation(
  db: Queryable,
  c: Proprietaire & { id: string; question: string; contexte: ContexteHub },
): Promise<void> {
  const titre = c.question.length <= 80 ? c.question : `${c.question.slice(0, 79).trimEnd()}…`;
  await db.query(
    `INSERT INTO conversations_hub (id, organisation_id, compte_id, titre, annonce_id, projet_id, contexte)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [c.id, c.organisationId, c.compteId, titre, c.contexte.annonce ?? null, c.contexte.projet_id ?? null, c.contexte],
  );
}

/**
 * Removes a conversation that holds no question: the one a question opened and that was refused before it ran
 * (credits, the key's cap), so that refusals leave nothing behind.
 */
export async function supprimerSiSansQuestion(db: Queryable, id: string): Promise<void> {
  await db.query(
    `DELETE FROM conversations_hub c WHERE c.id = $1
        AND NOT EXISTS (SELECT 1 FROM questions_hub q WHERE q.conversation_id = c.id)`,
    [id],
  );
}

/** The conversation, whoever owns it (null when absent). */
export async function lireConversation(db: Queryable, id: string): Promise<ConversationComplete | null> {
  const { rows } = await db.query<LigneConversation>('SELECT * FROM conversations_hub WHERE id = $1', [id]);
  return rows[0] ? conversationDe(rows[0]) : null;
}

/** The number of the conversation's last question (0 before the first): where a revived workflow counts from. */
export async function derniereQuestion(db: Queryable, conversationId: string): Promise<number> {
  const { rows } = await db.query<{ n: number | null }>(
    'SELECT max(numero) AS n FROM questions_hub WHERE conversation_id = $1',
    [conversationId],
  );
  return rows[0]?.n ?? 0;
}

/** An owner's conversations, most recently changed first, from the position `apres` (exclusive). */
export async function listerConversations(
  db: Queryable,
  proprietaire: Proprietaire,
  filtre: { projetId?: string; epinglees?: boolean },
  limite: number,
  apres: [string, string] | null,
): Promise<{ conversations: Conversation[]; suivante: [string, string] | null }> {
  const [proprietaireLigne, proprietaireId] = ligneDe(proprietaire);
  const { rows } = await db.query<LigneConversation & { change_le: Date }>(
    `SELECT *, coalesce(maj_le, cree_le) AS change_le FROM conversations_hub
      WHERE ${proprietaireLigne}
        AND ($2::uuid IS NULL OR projet_id = $2)
        AND ($3::boolean IS NULL OR epinglee = $3)
        AND ($4::timestamptz IS NULL OR (coalesce(maj_le, cree_le), id) < ($4, $5::uuid))
      ORDER BY coalesce(maj_le, cree_le) DESC, id DESC
      LIMIT $6`,
    [
      proprietaireId,
      filtre.projetId ?? null,
      filtre.epinglees ?? null,
      apres?.[0] ?? null,
      apres?.[1] ?? null,
      limite + 1,
    ],
  );
  const page = rows.slice(0, limite);
  const last = page.at(-1);
  return {
    conversations: page.map((r) => enPublic(conversationDe(r))),
    suivante: rows.length > limite && last ? [last.change_le.toISOString(), last.id] : null,
  };
}

export interface MessageHub {
  rang: number;
  role: 'user' | 'assistant';
  contenu: string;
  outils: Array<{ nom: string; entree: unknown; resultat: unknown }>;
}

/** The last `n` messages of the thread, in order. */
export async function derniersMessages(db: Queryable, conversationId: string, n: number): Promise<MessageHub[]> {
  const { rows } = await db.query<MessageHub>(
    `SELECT rang, role, contenu, outils FROM (
       SELECT rang, role, contenu, outils FROM messages_hub WHERE conversation_id = $1 ORDER BY rang DESC LIMIT $2
     ) m ORDER BY rang`,
    [conversationId, n],
  );
  return rows;
}

/** A message appended to the thread, once per question and role (a retried step writes nothing twice). */
export async function ajouterMessage(
  db: Queryable,
  m: { conversationId: string; numero: number; role: 'user' | 'assistant'; contenu: string; outils?: unknown[] },
): Promise<void> {
  await db.query(
    `INSERT INTO messages_hub (conversation_id, rang, role, contenu, outils, numero)
     SELECT $1, coalesce(max(rang), 0) + 1, $2, $3, $4, $5 FROM messages_hub WHERE conversation_id = $1
     ON CONFLICT (conversation_id, numero, role) DO NOTHING`,
    [m.conversationId, m.role, m.contenu, JSON.stringify(m.outils ?? []), m.numero],
  );
  await db.query('UPDATE conversations_hub SET maj_le = now() WHERE id = $1', [m.conversationId]);
}

export interface QuestionHub {
  numero: number;
  cleId: string | null;
  question: string;
  demande: QuestionDemandee;
  statut: 'en_cours' | 'repondue' | 'echouee';
  reponse: Record<string, unknown> | null;
  erreur: { code: string; detail: string } | null;
  credits: number | null;
}

/** A question of the conversation (null when absent). */
export async function lireQuestion(db: Queryable, conversationId: string, numero: number): Promise<QuestionHub | null> {
  const { rows } = await db.query(
    'SELECT numero, cle_id, question, options, statut, reponse, erreur, credits FROM questions_hub WHERE conversation_id = $1 AND numero = $2',
    [conversationId, numero],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    numero: r.numero,
    cleId: r.cle_id,
    question: r.question,
    demande: r.options as QuestionDemandee,
    statut: r.statut,
    reponse: r.reponse,
    erreur: r.erreur,
    credits: r.credits,
  };
}

-- The Hub: conversations of personal accounts, their messages, and what each question ran. A conversation is also a
-- Temporal workflow (its id is the conversation's); the workflow orders the questions, these tables hold the text
-- and the tool results, which stay out of the workflow's history.

CREATE TABLE conversations_hub (
  id uuid PRIMARY KEY,
  organisation_id uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  compte_id uuid NOT NULL REFERENCES comptes (id) ON DELETE CASCADE,
  titre text CHECK (char_length(titre) <= 200),
  annonce_id text CHECK (char_length(annonce_id) <= 200),
  -- The project designated when the conversation was opened (projects are documents of the account; no key here).
  projet_id uuid,
  epinglee boolean NOT NULL DEFAULT false,
  -- The context the conversation was opened with (`contexte` of question_hub), kept for the questions that follow.
  contexte jsonb NOT NULL DEFAULT '{}',
  cree_le timestamptz NOT NULL DEFAULT now(),
  maj_le timestamptz
);
-- conversations_hub lists an account's conversations, most recently changed first.
CREATE INDEX conversations_hub_recentes ON conversations_hub (compte_id, (coalesce(maj_le, cree_le)) DESC, id DESC);

-- One row per question asked: its state and, once answered, the whole response (without its credits block), so a
-- retried request or a restarted workflow serves the same answer instead of asking again.
CREATE TABLE questions_hub (
  conversation_id uuid NOT NULL REFERENCES conversations_hub (id) ON DELETE CASCADE,
  numero integer NOT NULL CHECK (numero >= 1),
  cle_id uuid REFERENCES cles (id) ON DELETE SET NULL,
  question text NOT NULL,
  -- outils_autorises, plafond_credits, memoire, as asked.
  options jsonb NOT NULL DEFAULT '{}',
  statut text NOT NULL DEFAULT 'en_cours' CHECK (statut IN ('en_cours', 'repondue', 'echouee')),
  reponse jsonb,
  erreur jsonb,
  -- What the question cost in all (its price and its tools'), once settled.
  credits integer,
  cree_le timestamptz NOT NULL DEFAULT now(),
  repondue_le timestamptz,
  PRIMARY KEY (conversation_id, numero)
);

-- The model's turns and tool calls of a question: a turn's assistant message (its tool calls as the model wrote them),
-- then one row per call with its result. The workflow's history only carries their ranks.
CREATE TABLE tours_hub (
  conversation_id uuid NOT NULL,
  numero integer NOT NULL,
  tour integer NOT NULL,
  -- The assistant message as Chat Completions returned it (content and tool_calls).
  message jsonb NOT NULL,
  PRIMARY KEY (conversation_id, numero, tour),
  FOREIGN KEY (conversation_id, numero) REFERENCES questions_hub ON DELETE CASCADE
);

CREATE TABLE appels_hub (
  conversation_id uuid NOT NULL,
  numero integer NOT NULL,
  tour integer NOT NULL,
  rang integer NOT NULL,
  -- The model's id of the call, echoed in the tool message that answers it.
  appel_id text NOT NULL,
  outil text NOT NULL,
  entree jsonb NOT NULL,
  resultat jsonb,
  erreur jsonb,
  credits integer NOT NULL DEFAULT 0,
  -- The ledger key of the call's debit (hub:<conversation>:<question>:<tour>:<rang>), to give it back on failure.
  cle_debit text,
  fait_le timestamptz,
  PRIMARY KEY (conversation_id, numero, tour, rang),
  FOREIGN KEY (conversation_id, numero, tour) REFERENCES tours_hub ON DELETE CASCADE
);

-- The thread as conversations_hub_lire serves it: the user's questions and the Hub's answers, in order.
CREATE TABLE messages_hub (
  conversation_id uuid NOT NULL REFERENCES conversations_hub (id) ON DELETE CASCADE,
  rang integer NOT NULL,
  role text NOT NULL CHECK (role IN ('user', 'assistant')),
  contenu text NOT NULL,
  -- Tools the answer rests on: [{nom, entree, resultat}].
  outils jsonb NOT NULL DEFAULT '[]',
  numero integer NOT NULL,
  cree_le timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conversation_id, rang),
  UNIQUE (conversation_id, numero, role)
);

-- What a question costs, and its failure's give-back, exactly once. Its price was debited when it started (ledger key
-- hub:<conversation>:<numero>), each tool call under its own key (appels_hub.cle_debit).
--   p_reussie true  → nothing to write: the debits stand; returns the question's whole cost, its price and its tools'.
--   p_reussie false → one `restitution` row giving back the price and every tool debit, pool by pool; returns 0.
-- Under the organisation lock; a second call for the same question changes nothing and returns the same figure.
CREATE FUNCTION svc_regler_question_hub(p_conversation uuid, p_numero integer, p_reussie boolean)
RETURNS TABLE (debites integer, restants bigint)
LANGUAGE plpgsql AS $$
DECLARE
  base text := 'hub:' || p_conversation || ':' || p_numero;
  c conversations_hub;
  q questions_hub;
  cles text[];
  r record;
  s record;
  rendue boolean;
BEGIN
  SELECT * INTO c FROM conversations_hub WHERE id = p_conversation;
  SELECT * INTO q FROM questions_hub WHERE conversation_id = p_conversation AND numero = p_numero;
  PERFORM 1 FROM organisations WHERE id = c.organisation_id FOR UPDATE;
  SELECT base || coalesce(array_agg(a.cle_debit) FILTER (WHERE a.cle_debit IS NOT NULL), '{}') INTO cles
    FROM appels_hub a WHERE a.conversation_id = p_conversation AND a.numero = p_numero;
  SELECT coalesce(-sum(m.credits), 0)::integer AS credits, coalesce(sum(m.gratuits), 0)::integer AS gratuits,
         coalesce(sum(m.inclus), 0)::integer AS inclus, coalesce(sum(m.factures), 0)::integer AS factures
    INTO r FROM mouvements m WHERE m.cle_idempotence = ANY (cles);
  rendue := EXISTS (SELECT 1 FROM mouvements WHERE cle_idempotence = base || ':restitution');
  IF NOT p_reussie AND NOT rendue AND r.credits <> 0 THEN
    PERFORM svc_ecrire(c.organisation_id, q.cle_id, 'restitution', -r.gratuits, -r.inclus, -r.factures,
                       'question_hub', NULL, NULL, 'Question du Hub en échec : crédits rendus, outils compris',
                       base || ':restitution');
    rendue := true;
  END IF;
  SELECT * INTO s FROM svc_solde(c.organisation_id, q.cle_id);
  RETURN QUERY SELECT CASE WHEN rendue THEN 0 ELSE r.credits END, s.restants;
END $$;

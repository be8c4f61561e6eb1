-- The Hub for every key with the `hub` scope: a conversation asked with an organisation key (attached to no personal
-- account) belongs to the organisation itself, and is listed to the organisation keys of that organisation only.
ALTER TABLE conversations_hub ALTER COLUMN compte_id DROP NOT NULL;
-- An organisation's own conversations, most recently changed first (an account's have conversations_hub_recentes).
CREATE INDEX conversations_hub_organisation ON conversations_hub (organisation_id, (coalesce(maj_le, cree_le)) DESC, id DESC)
  WHERE compte_id IS NULL;

-- Tasks still waiting for their start: each api instance looks for them every few seconds (domain/taches/reprise.ts).
CREATE INDEX taches_en_attente ON taches (cree_le) WHERE statut = 'en_attente';

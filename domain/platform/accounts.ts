import { z } from 'zod';
import { transaction, type Db } from '../../db/client.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { ApiError, invalidField } from '../errors.ts';
import { SCOPES, TIERS, type Scope, type Tier } from '../catalogue.ts';
import { balanceOf, grant } from './ledger.ts';

/** Credits granted when an organisation is opened (pricing rule 4). */
export const OPENING_CREDITS = 500;
/** Every scope but lien_origine, which unlocks portal identifiers and links and is granted explicitly. */
export const DEFAULT_SCOPES: Scope[] = SCOPES.filter((s) => s !== 'lien_origine');

const ScopeList = z.array(z.enum(SCOPES)).max(SCOPES.length);

export const OrganisationCreateSchema = z
  .object({
    nom: z.string().trim().min(1).max(200),
    acces: z.enum(TIERS),
    portees: ScopeList.optional(),
    quota_minute: z.number().int().min(1).max(1_000_000).optional(),
    plafond_depense_eur: z.number().min(0).max(10_000_000).optional(),
    max_webhooks: z.number().int().min(0).max(1000).optional(),
  })
  .strict();

export const OrganisationPatchSchema = z
  .object({
    nom: z.string().trim().min(1).max(200),
    statut: z.enum(['active', 'suspendue']),
    acces: z.enum(TIERS),
    portees: ScopeList,
    quota_minute: z.number().int().min(1).max(1_000_000),
    plafond_depense_eur: z.number().min(0).max(10_000_000),
    max_webhooks: z.number().int().min(0).max(1000),
  })
  .partial()
  .strict();

export const KeyCreateSchema = z
  .object({
    mode: z.enum(['live', 'test']),
    personnelle: z.boolean().optional(),
    /** Attach the new key to an existing personal account (rotation keeps memory and profile). */
    compte_id: z.uuid().optional(),
    portees: ScopeList.optional(),
    plafond_mensuel: z.number().int().min(0).nullable().optional(),
    expire_le: z.iso.datetime({ offset: true }).or(z.iso.date()).nullable().optional(),
  })
  .strict();

export const CreditGrantSchema = z
  .object({
    credits: z
      .number()
      .int()
      .refine((n) => n !== 0, 'doit être non nul'),
    motif: z.string().trim().min(3).max(500),
  })
  .strict();

export interface Organisation {
  id: string;
  nom: string;
  acces: Tier;
  statut: 'active' | 'suspendue';
  portees: Scope[];
  quota_minute: number;
  plafond_depense_eur: number;
  max_webhooks: number;
  cree_le: string;
}

/** What authentication needs of a key, joined with its organisation. */
export interface KeyRecord {
  id: string;
  mode: 'live' | 'test';
  compteId: string | null;
  portees: Scope[] | null;
  plafondMensuel: number | null;
  expireLe: Date | null;
  revoqueeLe: Date | null;
  organisation: Organisation;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const ORG_COLUMNS = `o.id, o.nom, o.acces, o.statut, o.portees, o.quota_minute, o.plafond_depense_eur, o.max_webhooks, o.cree_le`;

function toOrganisation(r: Record<string, unknown>): Organisation {
  return {
    id: r.id as string,
    nom: r.nom as string,
    acces: r.acces as Tier,
    statut: r.statut as Organisation['statut'],
    portees: r.portees as Scope[],
    quota_minute: r.quota_minute as number,
    plafond_depense_eur: r.plafond_depense_eur as number,
    max_webhooks: r.max_webhooks as number,
    cree_le: new Date(r.cree_le as string).toISOString(),
  };
}

export function createAccounts(db: Db, defaults: { quotaMinute: number }) {
  async function getOrganisation(id: string): Promise<Organisation> {
    const { rows } = await db.query(`SELECT ${ORG_COLUMNS} FROM organisations o WHERE o.id = $1`, [id]);
    if (!rows[0]) throw new ApiError('ressource_absente', `Aucune organisation ${id}.`);
    return toOrganisation(rows[0]);
  }

  return {
    getOrganisation,

    /** Opens an organisation with its 500 free credits, in one transaction. */
    async createOrganisation(input: z.infer<typeof OrganisationCreateSchema>): Promise<Organisation> {
      const id = await transaction(db, async (tx) => {
        const { rows } = await tx.query(
          `INSERT INTO organisations (nom, acces, portees, quota_minute, plafond_depense_eur, max_webhooks)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
          [
            input.nom,
            input.acces,
            input.portees ?? DEFAULT_SCOPES,
            input.quota_minute ?? defaults.quotaMinute,
            input.plafond_depense_eur ?? 0,
            input.max_webhooks ?? 10,
          ],
        );
        await grant(tx, rows[0].id, OPENING_CREDITS, 'Crédits gratuits à l’ouverture du compte', 'ouverture');
        return rows[0].id as string;
      });
      return getOrganisation(id);
    },

    async updateOrganisation(id: string, patch: z.infer<typeof OrganisationPatchSchema>): Promise<Organisation> {
      const entries = Object.entries(patch);
      if (entries.length > 0) {
        const sets = entries.map(([k], i) => `${k} = $${i + 2}`);
        const { rowCount } = await db.query(
          `UPDATE organisations SET ${sets.join(', ')}, maj_le = now() WHERE id = $1`,
          [id, ...entries.map(([, v]) => v)],
        );
        if (!rowCount) throw new ApiError('ressource_absente', `Aucune organisation ${id}.`);
      }
      return getOrganisation(id);
    },

    /** Issues a key: returned in clear only here; the database keeps its SHA-256. */
    async createKey(organisationId: string, input: z.infer<typeof KeyCreateSchema>) {
      const organisation = await getOrganisation(organisationId);
      const outside = (input.portees ?? []).filter((p) => !organisation.portees.includes(p));
      if (outside.length > 0) {
        throw invalidField('portees', `Portées non ouvertes à l’organisation : ${outside.join(', ')}.`);
      }
      const cle = `pk_${input.mode}_${randomToken(32)}`;
      return transaction(db, async (tx) => {
        let compteId: string | null = null;
        if (input.compte_id) {
          const { rows } = await tx.query('SELECT id FROM comptes WHERE id = $1 AND organisation_id = $2', [
            input.compte_id,
            organisationId,
          ]);
          if (!rows[0]) throw invalidField('compte_id', 'Compte personnel inconnu dans cette organisation.');
          compteId = rows[0].id;
        } else if (input.personnelle) {
          const { rows } = await tx.query('INSERT INTO comptes (organisation_id) VALUES ($1) RETURNING id', [
            organisationId,
          ]);
          compteId = rows[0].id;
        }
        const { rows } = await tx.query(
          `INSERT INTO cles (organisation_id, compte_id, mode, prefixe, empreinte, portees, plafond_mensuel, expire_le)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id, cree_le`,
          [
            organisationId,
            compteId,
            input.mode,
            cle.slice(0, 12),
            sha256(cle),
            input.portees ?? null,
            input.plafond_mensuel ?? null,
            input.expire_le ?? null,
          ],
        );
        return {
          id: rows[0].id as string,
          cle,
          prefixe: cle.slice(0, 12),
          mode: input.mode,
          compte_id: compteId,
          portees: input.portees ?? null,
          plafond_mensuel: input.plafond_mensuel ?? null,
          expire_le: input.expire_le ?? null,
          cree_le: new Date(rows[0].cree_le).toISOString(),
        };
      });
    },

    async revokeKey(id: string) {
      const { rows } = await db.query(
        `UPDATE cles SET revoquee_le = coalesce(revoquee_le, now()) WHERE id = $1 RETURNING id, organisation_id, revoquee_le`,
        [id],
      );
      if (!rows[0]) throw new ApiError('ressource_absente', `Aucune clé ${id}.`);
      return {
        id: rows[0].id as string,
        organisation_id: rows[0].organisation_id as string,
        revoquee_le: new Date(rows[0].revoquee_le).toISOString(),
      };
    },

    /** Grants free credits, or corrects them downward (never below zero), under the organisation's lock. */
    async grantCredits(organisationId: string, input: z.infer<typeof CreditGrantSchema>) {
      await getOrganisation(organisationId);
      return transaction(db, async (tx) => {
        await tx.query('SELECT 1 FROM organisations WHERE id = $1 FOR UPDATE', [organisationId]);
        if (input.credits < 0) {
          const before = await balanceOf(tx, organisationId, null);
          if (before.gratuits + input.credits < 0) {
            throw invalidField('credits', `La correction dépasse les crédits gratuits restants (${before.gratuits}).`);
          }
        }
        await grant(tx, organisationId, input.credits, input.motif);
        const after = await balanceOf(tx, organisationId, null);
        return {
          restants: after.restants,
          gratuits: after.gratuits,
          inclus: after.inclus,
          facturables: after.facturables,
        };
      });
    },

    /** The key and its organisation, by the key in clear; null when unknown. Looked up by hash. */
    findKey: (cle: string) => findKeyWhere('c.empreinte', sha256(cle)),

    /** The key and its organisation, by the key's id (a caller authenticated earlier); null when unknown. */
    findKeyById: (id: string) => (UUID.test(id) ? findKeyWhere('c.id', id) : Promise.resolve(null)),
  };

  async function findKeyWhere(column: 'c.empreinte' | 'c.id', value: Buffer | string): Promise<KeyRecord | null> {
    const { rows } = await db.query(
      `SELECT c.id AS cle_id, c.mode, c.compte_id, c.portees AS cle_portees, c.plafond_mensuel, c.expire_le,
              c.revoquee_le, ${ORG_COLUMNS}
         FROM cles c JOIN organisations o ON o.id = c.organisation_id
        WHERE ${column} = $1`,
      [value],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      id: r.cle_id,
      mode: r.mode,
      compteId: r.compte_id,
      portees: r.cle_portees,
      plafondMensuel: r.plafond_mensuel,
      expireLe: r.expire_le ? new Date(r.expire_le) : null,
      revoqueeLe: r.revoquee_le ? new Date(r.revoquee_le) : null,
      organisation: toOrganisation(r),
    };
  }
}

export type Accounts = ReturnType<typeof createAccounts>;

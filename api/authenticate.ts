import type { FastifyRequest } from 'fastify';
import { TIERS, type Caller, type Operation } from '../domain/catalogue.ts';
import { ApiError } from '../domain/errors.ts';
import type { Accounts, KeyRecord } from '../domain/platform/accounts.ts';
import { balanceOf, type Balance } from '../domain/platform/ledger.ts';
import type { Db } from '../db/client.ts';
import type { RateLimiter, RateState } from './rate-limit.ts';

// Keys and balances are kept in memory this long: the hot path then needs no round trip. Admin changes made
// through this process clear the memory at once; other instances see them within this delay.
const MEMORY_MS = 2000;

export interface Authenticated {
  caller: Caller;
  key: KeyRecord;
  rate: RateState;
  /** Credits still usable before the call (null in the sandbox). */
  restants: number | null;
}

function bearer(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header)
    throw new ApiError('cle_absente', 'En-tête Authorization absent : envoyez « Authorization: Bearer <clé> ».');
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!match) throw new ApiError('cle_invalide', 'En-tête Authorization mal formé : « Bearer <clé> » attendu.');
  return match[1];
}

export function createAuthenticator(deps: { db: Db; accounts: Accounts; limiter: RateLimiter; now?: () => number }) {
  const now = deps.now ?? Date.now;
  const keys = new Map<string, { record: KeyRecord | null; until: number }>();
  const balances = new Map<string, { balance: Balance; until: number }>();

  async function keyRecord(cle: string): Promise<KeyRecord | null> {
    const hit = keys.get(cle);
    if (hit && hit.until > now()) return hit.record;
    const record = await deps.accounts.findKey(cle);
    if (keys.size > 50_000) keys.clear();
    keys.set(cle, { record, until: now() + MEMORY_MS });
    return record;
  }

  async function balance(organisationId: string, cleId: string): Promise<Balance> {
    const id = `${organisationId}:${cleId}`;
    const hit = balances.get(id);
    if (hit && hit.until > now()) return hit.balance;
    const fresh = await balanceOf(deps.db, organisationId, cleId);
    if (balances.size > 50_000) balances.clear();
    balances.set(id, { balance: fresh, until: now() + MEMORY_MS });
    return fresh;
  }

  return {
    /** The checks of the error table, in its order, before any body is read. */
    async authenticate(request: FastifyRequest, operation: Operation): Promise<Authenticated> {
      const cle = bearer(request);
      const key = /^pk_(live|test)_[0-9A-Za-z]{32}$/.test(cle) ? await keyRecord(cle) : null;
      if (!key) throw new ApiError('cle_invalide', 'Clé inconnue.');
      if (key.revoqueeLe) throw new ApiError('cle_invalide', 'Clé révoquée.');
      if (key.expireLe && key.expireLe.getTime() <= now()) throw new ApiError('cle_invalide', 'Clé expirée.');
      const org = key.organisation;
      if (org.statut !== 'active') {
        throw new ApiError('organisation_suspendue', 'L’organisation de cette clé est suspendue.');
      }
      const portees = (key.portees ?? org.portees).filter((p) => org.portees.includes(p));
      if (!portees.includes(operation.scope)) {
        throw new ApiError('portee_insuffisante', `La portée « ${operation.scope} » n’est pas ouverte à cette clé.`);
      }
      if (operation.personalKey && !key.compteId) {
        throw new ApiError(
          'portee_insuffisante',
          'Cette opération demande une clé attachée à un compte personnel (clé « personnelle »).',
        );
      }
      if (TIERS.indexOf(org.acces) < TIERS.indexOf(operation.tier)) {
        throw new ApiError(
          'palier_insuffisant',
          `Opération du palier « ${operation.tier} » ; l’accès de l’organisation est « ${org.acces} ».`,
        );
      }
      const sandbox = key.mode === 'test';
      if (sandbox && !operation.sandbox) {
        throw new ApiError('hors_bac_a_sable', 'Cette opération n’a pas de bac à sable : utilisez une clé pk_live_.');
      }
      let restants: number | null = null;
      if (!sandbox) {
        const b = await balance(org.id, key.id);
        restants = b.restants;
        if (operation.credits > 0) {
          if (b.restants < operation.credits) {
            throw new ApiError(
              'credits_insuffisants',
              `Il reste ${b.restants} crédits ; cette opération en coûte ${operation.credits}.`,
            );
          }
          if (b.clePlafond !== null && b.cleUtilise + operation.credits > b.clePlafond) {
            throw new ApiError('plafond_cle', `Plafond mensuel de la clé atteint (${b.clePlafond} crédits).`);
          }
        }
      }
      const rate = deps.limiter.hit(org.id, org.quota_minute);
      if (!rate.allowed) {
        throw new ApiError('quota_minute', `Quota de ${rate.limit} appels par minute atteint pour l’organisation.`, {
          headers: {
            'Retry-After': rate.resetS,
            'RateLimit-Limit': rate.limit,
            'RateLimit-Remaining': 0,
            'RateLimit-Reset': rate.resetS,
          },
        });
      }
      return {
        caller: { organisationId: org.id, cleId: key.id, compteId: key.compteId, sandbox, portees },
        key,
        rate,
        restants,
      };
    },

    /** After a debit: the balance in memory follows the ledger's answer. */
    noteDebit(organisationId: string, cleId: string, debited: number, restants: number) {
      const hit = balances.get(`${organisationId}:${cleId}`);
      if (hit) hit.balance = { ...hit.balance, restants, cleUtilise: hit.balance.cleUtilise + debited };
    },

    /** Admin changes: forget keys and balances at once. */
    forget() {
      keys.clear();
      balances.clear();
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;

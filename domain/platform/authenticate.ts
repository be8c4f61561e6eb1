import type { Db } from '../../db/client.ts';
import { TIERS, type Caller, type Operation } from '../catalogue.ts';
import { ApiError } from '../errors.ts';
import type { Accounts, KeyRecord } from './accounts.ts';
import { balanceOf, type Balance } from './ledger.ts';
import type { RateLimiter, RateState } from './rate-limit.ts';

// Keys and balances are kept in memory this long: the hot path then needs no round trip. Admin changes made
// through this process clear the memory at once; other instances see them within this delay.
const MEMORY_MS = 2000;

/**
 * Who calls: the key in clear (an HTTP or MCP Bearer token; undefined when none was sent), or the id of a key
 * authenticated earlier (the Hub's tool calls). Either way the key's present state is checked on every call.
 */
export type Credential = { cle: string | undefined } | { cleId: string };

/** A call let in by the checks of the error table, for one operation. */
export interface Admission {
  operation: Operation;
  caller: Caller;
  rate: RateState;
  /** Credits still usable before the call (null in the sandbox). */
  restants: number | null;
  /** The call's id: in the ledger, the logs and the answer (Svc-Requete, `requete`). */
  requestId: string;
}

/**
 * The credential of an `Authorization` header, `Bearer <key>` (HTTP and MCP alike): no header is no key, another
 * form is refused as cle_invalide.
 */
export function bearer(authorization: string | undefined): Credential {
  if (!authorization) return { cle: undefined };
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
  if (!match) throw new ApiError('cle_invalide', 'En-tête Authorization mal formé : « Bearer <clé> » attendu.');
  return { cle: match[1] };
}

export function createAuthenticator(deps: { db: Db; accounts: Accounts; limiter: RateLimiter; now?: () => number }) {
  const now = deps.now ?? Date.now;
  const keys = new Map<string, { record: KeyRecord | null; until: number }>();
  const balances = new Map<string, { balance: Balance; until: number }>();

  async function keyRecord(credential: Credential): Promise<KeyRecord | null> {
    const byId = !('cle' in credential);
    const id = byId ? `id:${credential.cleId}` : credential.cle!;
    // A string that cannot be a key costs no lookup, and takes no room in memory.
    if (!byId && !/^pk_(live|test)_[0-9A-Za-z]{32}$/.test(id)) return null;
    const hit = keys.get(id);
    if (hit && hit.until > now()) return hit.record;
    const record = byId ? await deps.accounts.findKeyById(credential.cleId) : await deps.accounts.findKey(id);
    if (keys.size > 50_000) keys.clear();
    keys.set(id, { record, until: now() + MEMORY_MS });
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
    /** The checks of the error table, in its order, before any input is read. */
    async admit(credential: Credential, operation: Operation, requestId: string): Promise<Admission> {
      if ('cle' in credential && !credential.cle) {
        throw new ApiError('cle_absente', 'En-tête Authorization absent : envoyez « Authorization: Bearer <clé> ».');
      }
      const key = await keyRecord(credential);
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
          rate,
        });
      }
      return {
        operation,
        caller: { organisationId: org.id, cleId: key.id, compteId: key.compteId, sandbox, portees },
        rate,
        restants,
        requestId,
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

import { performance } from 'node:perf_hooks';
import type { Db } from '../../db/client.ts';
import { TIERS, type Caller, type Operation, type Scope, type Tier } from '../catalogue.ts';
import { ApiError } from '../errors.ts';
import type { Accounts, KeyRecord } from './accounts.ts';
import { listenToAccessChanges } from './changements-acces.ts';
import { balanceOf, type Balance } from './ledger.ts';
import { createMemory } from './memoire.ts';
import type { RateLimiter, RateState } from './rate-limit.ts';

// Keys, organisations and balances are kept in memory at most this long: the hot path then needs no round trip, and
// a revoked key, a suspended organisation or a changed scope is refused everywhere within it. Changes are also
// announced by the database (LISTEN svc_acces), which clears the memory of every instance at once; this bound holds
// when an announcement is lost. Entries are read again in the background past half of it.
export const MEMORY_MS = 2000;
/**
 * Balances are kept at most this long: a debit made by another instance or by the worker (a Hub question's tools) is
 * in every instance's `restants` within a second. This instance's own debits are in its very next answer (`debited`
 * below).
 */
export const BALANCE_MEMORY_MS = 900;

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
 * What a key may call: the facts about a key and its organisation that admit or refuse an operation before its input
 * is read (scope, personal key, tier, sandbox).
 */
export interface Rights {
  /** Scopes opened to both the key and the organisation. */
  portees: Scope[];
  /** The organisation's access tier. */
  acces: Tier;
  /** pk_test_ key: only operations with a sandbox. */
  sandbox: boolean;
  /** The key is attached to a personal account. */
  personnelle: boolean;
}

function rightsOf(key: KeyRecord): Rights {
  const org = key.organisation;
  return {
    portees: (key.portees ?? org.portees).filter((p) => org.portees.includes(p)),
    acces: org.acces,
    sandbox: key.mode === 'test',
    personnelle: key.compteId !== null,
  };
}

/**
 * Why a caller with these rights may not call `operation`, in the order of the error table, or null when it may: the
 * one rule of the pipeline's admission and of the tools listed to a key (domain/outils.ts).
 */
export function accessRefusal(rights: Rights, operation: Operation): ApiError | null {
  if (!rights.portees.includes(operation.scope)) {
    return new ApiError('portee_insuffisante', `La portée « ${operation.scope} » n’est pas ouverte à cette clé.`);
  }
  if (operation.personalKey && !rights.personnelle) {
    return new ApiError(
      'portee_insuffisante',
      'Cette opération demande une clé attachée à un compte personnel (clé « personnelle »).',
    );
  }
  if (TIERS.indexOf(rights.acces) < TIERS.indexOf(operation.tier)) {
    return new ApiError(
      'palier_insuffisant',
      `Opération du palier « ${operation.tier} » ; l’accès de l’organisation est « ${rights.acces} ».`,
    );
  }
  if (rights.sandbox && !operation.sandbox) {
    return new ApiError('hors_bac_a_sable', 'Cette opération n’a pas de bac à sable : utilisez une clé pk_live_.');
  }
  return null;
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
  const memory = { ttlMs: MEMORY_MS, refreshMs: MEMORY_MS / 2, max: 50_000 };
  const keys = createMemory<KeyRecord | null>(memory);
  const balances = createMemory<Balance & { readAt: number }>({
    ttlMs: BALANCE_MEMORY_MS,
    refreshMs: BALANCE_MEMORY_MS / 2,
    max: memory.max,
  });
  // The organisations' credits left after this process's last debit of each, with when the ledger said so: newer
  // than a balance whose read began before it, it is what the next answer says (read-your-writes), whichever key of
  // the organisation calls and whatever read was in flight meanwhile.
  const debited = new Map<string, { restants: number; at: number }>();
  const forget = () => {
    keys.clear();
    balances.clear();
    debited.clear();
  };
  const announcements = listenToAccessChanges(deps.db, forget);

  function keyRecord(credential: Credential): KeyRecord | null | Promise<KeyRecord | null> {
    if (!('cle' in credential)) {
      const id = credential.cleId;
      return keys.get(`id:${id}`, () => deps.accounts.findKeyById(id));
    }
    const cle = credential.cle!;
    // A string that cannot be a key costs no lookup, and takes no room in memory.
    if (!/^pk_(live|test)_[0-9A-Za-z]{32}$/.test(cle)) return null;
    return keys.get(cle, () => deps.accounts.findKey(cle));
  }

  async function balance(organisationId: string, cleId: string): Promise<Balance> {
    const b = await balances.get(`${organisationId}:${cleId}`, async () => {
      const readAt = performance.now();
      return { ...(await balanceOf(deps.db, organisationId, cleId)), readAt };
    });
    const last = debited.get(organisationId);
    return last && last.at > b.readAt ? { ...b, restants: last.restants } : b;
  }

  /** The first checks of the error table: the key is known and valid, its organisation active. */
  async function identify(credential: Credential): Promise<KeyRecord> {
    if ('cle' in credential && !credential.cle) {
      throw new ApiError('cle_absente', 'En-tête Authorization absent : envoyez « Authorization: Bearer <clé> ».');
    }
    const key = await keyRecord(credential);
    if (!key) throw new ApiError('cle_invalide', 'Clé inconnue.');
    if (key.revoqueeLe) throw new ApiError('cle_invalide', 'Clé révoquée.');
    if (key.expireLe && key.expireLe.getTime() <= now()) throw new ApiError('cle_invalide', 'Clé expirée.');
    if (key.organisation.statut !== 'active') {
      throw new ApiError('organisation_suspendue', 'L’organisation de cette clé est suspendue.');
    }
    return key;
  }

  /** One call against the organisation's per-minute rate; refused past its quota (the last check of the table). */
  async function countCall(org: KeyRecord['organisation']): Promise<RateState> {
    const rate = await deps.limiter.hit(org.id, org.quota_minute);
    if (!rate.allowed) {
      throw new ApiError('quota_minute', `Quota de ${rate.limit} appels par minute atteint pour l’organisation.`, {
        rate,
      });
    }
    return rate;
  }

  return {
    /** The checks of the error table, in its order, before any input is read. */
    async admit(credential: Credential, operation: Operation, requestId: string): Promise<Admission> {
      const key = await identify(credential);
      const org = key.organisation;
      const rights = rightsOf(key);
      const refused = accessRefusal(rights, operation);
      if (refused) throw refused;
      const { sandbox, portees } = rights;
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
      const rate = await countCall(org);
      return {
        operation,
        caller: { organisationId: org.id, cleId: key.id, compteId: key.compteId, sandbox, portees },
        rate,
        restants,
        requestId,
      };
    },

    /**
     * What a credential may call, its key checked as by every call (401, 403 organisation_suspendue) but nothing
     * counted: no quota, no balance (listing the tools of a key is not a call).
     */
    async rights(credential: Credential): Promise<Rights> {
      return rightsOf(await identify(credential));
    },

    /**
     * A call that is no operation (an MCP message other than a tool call: `tools/list`, `ping`…), priced nothing:
     * the key checked as by every call, the organisation's per-minute rate counted, refused past its quota with the
     * same problem as an operation.
     */
    async count(credential: Credential): Promise<RateState> {
      return countCall((await identify(credential)).organisation);
    },

    /**
     * After a debit (or an answer that settled its own credits, a Hub question's): the balances this process serves
     * follow the ledger's answer.
     */
    noteDebit(organisationId: string, cleId: string, credits: number, restants: number) {
      if (debited.size >= memory.max) debited.clear();
      debited.set(organisationId, { restants, at: performance.now() });
      balances.update(`${organisationId}:${cleId}`, (b) => ({ ...b, cleUtilise: b.cleUtilise + credits }));
    },

    /** Admin changes made through this process: forget keys and balances at once. */
    forget,

    /** Stops listening to the database's announcements. */
    close: () => announcements.close(),
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;

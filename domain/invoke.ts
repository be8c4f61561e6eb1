import { createHash, randomUUID } from 'node:crypto';
import {
  billsItself,
  fieldPlace,
  operationId,
  operationsByTool,
  priceOf,
  wayOf,
  type Caller,
  type Operation,
  type Services,
} from './catalogue.ts';
import { exigerEntree } from './entrees.ts';
import { ApiError, type RateFigures } from './errors.ts';
import type { Accounts } from './platform/accounts.ts';
import { createAuthenticator, type Admission, type Credential } from './platform/authenticate.ts';
import { createDebiter, type AnswerDebitOutcome } from './platform/debits.ts';
import { debit } from './platform/ledger.ts';
import type { Queryable } from '../db/client.ts';
import { createBufferPool, type BufferPool } from '../lib/buffer-pool.ts';
import { jsonBytes } from '../lib/json-bytes.ts';
import { createRateLimiter, type RateLimiter } from './platform/rate-limit.ts';
import { liveIsDemonstration } from './qualite.ts';
import { outsideSandbox, SANDBOX_COMMUNES } from './platform/sandbox.ts';

export type { Admission, Credential } from './platform/authenticate.ts';

/** The `credits` block of an answer. */
export interface Credits {
  debites: number;
  /** null in the sandbox. */
  restants: number | null;
}

/** What an admitted call asks besides its input. */
export interface RunOptions {
  /** For a task operation: the same key and input give back the same task. Checked here, whoever sends it. */
  idempotencyKey?: unknown;
  /** Fingerprints of answers the caller already holds (HTTP If-None-Match): the same answer is not sent again. */
  known?: string[];
  /**
   * The ledger key of this call's debit (the Hub's tool calls): a call retried with the same key is not debited
   * again, and its debit can be given back by that key.
   */
  billingKey?: string;
  /** The most this answer may cost (what a Hub question has left): a dearer answer is refused, nothing debited. */
  creditCap?: number;
}

export interface CallOptions extends RunOptions {
  /** The call's id (a new one when absent). */
  requestId?: string;
}

/** A served answer, with what every transport tells of it (over HTTP: the status, the body and the headers). */
export interface Invocation {
  operation: Operation;
  /** The result, without the `credits` block (for a task: the envelope, which carries the task's own). */
  output: unknown;
  credits: Credits;
  /** The result as JSON with its `credits` block, in UTF-8: the body every transport sends. */
  body: Buffer;
  /** The same body as a string (decoded on demand: HTTP sends the bytes). */
  readonly json: string;
  /** The answer's fingerprint (the HTTP ETag); an identical answer within 24 h is not debited again. */
  fingerprint: string;
  /** The caller already holds this very answer (`known`): nothing is sent, nothing debited. */
  unchanged: boolean;
  /** Date of the data behind the answer, and its age in seconds. */
  dataDate: string;
  dataAgeS: number;
  /** The organisation's per-minute figures after this call. */
  rate: RateFigures;
  requestId: string;
  /**
   * Gives the body's memory back for other answers, once the transport has sent it and will never read it again
   * (HTTP: when the response's last byte has left). Absent when the memory is not lent; a transport that keeps the
   * body or does not send it never calls it, and the memory goes to the garbage collector.
   */
  release?: () => void;
}

/** The id of a call, in the ledger, the logs and the answer (`requete`, Svc-Requete). */
export function newRequestId(): string {
  return `req_${randomUUID().replaceAll('-', '')}`;
}

/**
 * Any failure as the refusal a client is told: business refusals as they are; anything else is a fault of the
 * service, said without its internals (the fault itself goes to the log as the refusal's cause).
 */
function refusal(error: unknown, requestId: string): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError('erreur_interne', `Erreur du service ; rien n’a été débité. Référence : ${requestId}.`, {
    cause: error,
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function idempotencyKeyOf(key: unknown): string | undefined {
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new ApiError('parametres_invalides', 'Idempotency-Key : 1 à 255 caractères ASCII visibles.', {
      erreurs: [{ champ: 'Idempotency-Key', emplacement: 'entete', message: '1 à 255 caractères ASCII visibles' }],
    });
  }
  return key;
}

/** The operation's time-out; for a task, counted after the wait the client asked for (`attendre`). */
function timeoutMsOf(operation: Operation, input: unknown): number {
  const wait = operation.task ? Number((input as { attendre?: number }).attendre ?? 0) : 0;
  return (operation.timeoutS + wait) * 1000;
}

async function withTimeout<T>(
  operation: Operation,
  timeoutMs: number,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(
        new ApiError(
          'delai_depasse',
          `Le calcul dépasse le délai de l’opération (${operation.timeoutS} s) ; rien n’a été débité.`,
        ),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([run(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** A result with its serialised payload (without `credits`) and its fingerprint. */
interface Result {
  /** The output as the handler returned it; absent in the response memory, which keeps only the bytes. */
  output?: unknown;
  /**
   * The output as JSON in UTF-8 without its closing brace, encoded once: hashed, kept and sent as bytes, never
   * re-encoded per answer. An answer adds its `credits` block and the brace.
   */
  open: Buffer;
  /**
   * Whether the memory just past `open` (its brace, then CREDITS_ROOM bytes) is still free: the first answer made of
   * the result writes its `credits` block there, so that its body is the payload's own memory, not a copy. One
   * object, shared with the response memory's copy of the result, so that the room is taken once.
   */
  room: { free: boolean };
  fingerprint: string;
  /** Its price in credits, and the date of its data when the operation says it: read from the output once. */
  price: number;
  dataDate: string | null;
  /**
   * The last body made of it, with the credits it carries: a result served again from the response memory with the
   * same credits (nothing debited, the balance unchanged) is sent as the same bytes, not copied again.
   */
  lastBody?: { credits: Credits; bytes: Buffer };
  /** The memory of `open` when it is lent by the pool of bodies (a result nothing keeps beyond its answer). */
  memory?: ArrayBufferLike;
}

// Room for a `credits` block past a payload: `,"credits":{"debites":…,"restants":…}}` with numbers of up to 16 digits.
const CREDITS_ROOM = 80;
const CLOSE = Buffer.from('}');

/** A result's payload as a whole (`open` and its brace). */
const payloadOf = (result: Result): Buffer => Buffer.concat([result.open, CLOSE]);

/** A result's output: as computed, or read back from its bytes when it comes from the response memory. */
const outputOf = (result: Result): unknown => result.output ?? JSON.parse(payloadOf(result).toString());

/** The result of `output`, its memory lent by `pool` when given (a result kept by the response memory is not). */
function toResult(operation: Operation, output: unknown, pool?: BufferPool): Result {
  const hash = createHash('sha256').update(`${operation.tool}\0`);
  const dated = operation.computedAt;
  const payload = jsonBytes(output, { room: CREDITS_ROOM, take: pool?.take, hash: dated ? undefined : hash });
  // What the answer is, without when it was computed: the same answer computed again is the same answer.
  if (dated) jsonBytes({ ...(output as object), [dated]: undefined }, { hash });
  const digest = hash.digest('base64url');
  return {
    output,
    open: payload.subarray(0, -1),
    room: { free: true },
    fingerprint: `"${digest.slice(0, 27)}"`,
    price: priceOf(operation, output),
    dataDate: operation.dataDate?.(output as never) ?? null,
    memory: pool ? payload.buffer : undefined,
  };
}

// The response memory's size, counted in bytes of serialised results and their bodies: it keeps the bytes alone, not
// the parsed output (several times their size). Answers asked once and never again (a client walking through new
// requests) must not fill the heap: beyond this, the oldest go first.
const RESPONSE_CACHE_BYTES = 16 * 2 ** 20;
// Requests seen once, remembered (by their id alone) so that a second sight of one lets its result in: a stream of
// new requests then stores nothing, where keeping each result would churn the memory and its garbage collection for
// answers nobody asks again. A repeated request is computed twice before it is served from memory.
const ASKED_MAX = 100_000;

/** The bytes a kept result holds: its payload, and the last body made of it (about as long). */
const footprint = (result: Result) => 2 * result.open.length;

/** Results kept in memory for the operation's cache duration (never for personal or organisation-bound data). */
function createResponseCache() {
  const entries = new Map<string, { result: Result; until: number }>();
  const asked = new Set<string>();
  let bytes = 0;
  const drop = (id: string) => {
    const entry = entries.get(id);
    if (!entry) return;
    entries.delete(id);
    bytes -= footprint(entry.result);
  };
  return {
    get(id: string) {
      const hit = entries.get(id);
      if (hit && hit.until > Date.now()) return hit.result;
      if (hit) drop(id);
      return undefined;
    },
    /** Whether `offer` will keep the result of this request (it was asked before). */
    keeps: (id: string) => asked.has(id),
    /** Keeps a result whose request was asked before (else only notes the request). */
    offer(id: string, result: Result, seconds: number) {
      if (!asked.delete(id)) {
        if (asked.size >= ASKED_MAX) asked.clear();
        asked.add(id);
        return;
      }
      drop(id);
      entries.set(id, { result: { ...result, output: undefined }, until: Date.now() + seconds * 1000 });
      bytes += footprint(result);
      for (const oldest of entries.keys()) {
        if (bytes <= RESPONSE_CACHE_BYTES) break;
        drop(oldest);
      }
    },
  };
}

const DAY_MS = 86_400_000;

/**
 * Responses the ledger served per organisation, by fingerprint, with when it last debited them: an identical
 * response within 24 h of that is not debited, and knowing it here spares the ledger a round trip. What this process
 * does not know (served by another instance, or forgotten) the ledger's batch tells (reponses_servies).
 */
function createServedMemory() {
  const served = new Map<string, number>();
  return {
    seen: (id: string, now: number) => (served.get(id) ?? 0) > now - DAY_MS,
    note(id: string, at: number) {
      if (served.size > 200_000) served.clear();
      served.set(id, at);
    },
  };
}

/**
 * The debit of one answer under a ledger key (svc_debiter): written once whatever the retries; a retry finds it
 * written (`deja`) and is told what the first attempt debited.
 */
async function keyedDebit(
  db: Queryable,
  caller: Caller,
  tool: string,
  price: number,
  requete: string,
  empreinte: string,
  key: string,
): Promise<AnswerDebitOutcome> {
  const { issue, debites, restants } = await debit(db, {
    organisationId: caller.organisationId,
    cleId: caller.cleId,
    genre: 'debit',
    credits: price,
    operation: tool,
    requete,
    empreinte,
    idempotence: key,
  });
  if (issue === 'deja') return { issue: 'debite', debites: price, restants: Number(restants), serviLe: null };
  return { issue, debites, restants: Number(restants), serviLe: issue === 'debite' ? Date.now() : null };
}

/**
 * The payload with its `credits` block, as one JSON object (the block in place of the payload's closing brace). The
 * bytes are never changed once sent, so the same ones serve every answer that carries the same credits.
 */
function withCredits(result: Result, credits: Credits): Buffer {
  const last = result.lastBody;
  if (last && last.credits.debites === credits.debites && last.credits.restants === credits.restants) return last.bytes;
  const { open } = result;
  const empty = open.length === 1; // `{}`
  const block = `${empty ? '' : ','}"credits":${JSON.stringify(credits)}}`;
  let bytes: Buffer;
  if (result.room.free && block.length <= CREDITS_ROOM + 1) {
    result.room.free = false;
    bytes = Buffer.from(open.buffer, open.byteOffset, open.length + block.length);
    bytes.write(block, open.length, 'latin1');
  } else {
    bytes = Buffer.concat([open, Buffer.from(block, 'latin1')]);
  }
  result.lastBody = { credits, bytes };
  return bytes;
}

/**
 * The request pipeline of every caller (DESIGN.md sections 3 and 12): the checks of the error table, parameters,
 * the handler under its time-out, billing and the `credits` block. HTTP, the Hub and MCP are adapters over it: a
 * call is billed and refused the same way whoever makes it, and it only ever fails with an ApiError.
 */
export function createPipeline(deps: {
  operations: Operation[];
  services: Services;
  accounts: Accounts;
  limiter?: RateLimiter;
}) {
  const { services } = deps;
  const auth = createAuthenticator({
    db: services.db,
    accounts: deps.accounts,
    limiter: deps.limiter ?? createRateLimiter({ db: services.db, now: () => services.now().getTime() }),
  });
  const debiter = createDebiter(services.db);
  const byId = new Map(deps.operations.map((operation) => [operationId(operation), operation]));
  const waysByTool = operationsByTool(deps.operations);
  const cache = createResponseCache();
  const served = createServedMemory();
  const bodies = createBufferPool();

  /** The checks of the error table for one call of `operation`, before its input is read. */
  async function admit(credential: Credential, operation: Operation, requestId = newRequestId()): Promise<Admission> {
    try {
      return await auth.admit(credential, operation, requestId);
    } catch (error) {
      throw refusal(error, requestId);
    }
  }

  /** The rest of an admitted call: its flat raw input (path parameters with query or body, or a tool's arguments). */
  async function run(admission: Admission, raw: unknown, options: RunOptions = {}): Promise<Invocation> {
    try {
      return await serve(admission, raw, options);
    } catch (error) {
      throw refusal(error, admission.requestId);
    }
  }

  async function serve(admission: Admission, raw: unknown, options: RunOptions): Promise<Invocation> {
    const { operation, caller } = admission;
    if (!isPlainObject(raw)) {
      throw new ApiError('parametres_invalides', 'Le corps doit être un objet JSON.', {
        erreurs: [{ champ: '(corps)', emplacement: 'corps', message: 'objet JSON attendu' }],
      });
    }
    const input = exigerEntree(operation.input, raw, fieldPlace(operation));
    if (caller.sandbox && operation.territoires) {
      for (const territoire of operation.territoires(input)) {
        const outside = outsideSandbox(territoire);
        if (outside) {
          throw new ApiError(
            'hors_bac_a_sable',
            `${outside} est hors du bac à sable : les clés de test couvrent les communes ${SANDBOX_COMMUNES.join(', ')} (voir /docs/erreurs).`,
          );
        }
      }
    }
    const idempotencyKey = idempotencyKeyOf(options.idempotencyKey);
    // Live answers kept while the live data was the demonstration are never served once it is gone; personal data
    // never enters the shared memory.
    const donnees = caller.sandbox ? 'test' : (await liveIsDemonstration(services.db)) ? 'demonstration' : 'live';
    // Portal links are served with the scope lien_origine only (secteur, faits_adresse…): an answer made for a caller
    // with it is never served to one without it, nor the reverse.
    const portee = caller.portees.includes('lien_origine') ? '|lien_origine' : '';
    const cacheId =
      operation.cacheS > 0 && !operation.personalKey
        ? `${operation.tool}|${donnees}${portee}${operation.cacheParOrganisation ? `|${caller.organisationId}` : ''}|${canonical(input)}`
        : null;
    let result = cacheId ? cache.get(cacheId) : undefined;
    if (!result) {
      const output = await withTimeout(operation, timeoutMsOf(operation, input), (signal) =>
        operation.handler(input, { caller, requestId: admission.requestId, idempotencyKey, signal, services }),
      );
      // A result the response memory will not keep lives as long as its answer: its memory is lent by the pool.
      const kept = cacheId !== null && cache.keeps(cacheId);
      result = toResult(operation, output, kept ? undefined : bodies);
      if (cacheId) cache.offer(cacheId, result, operation.cacheS);
    }

    const now = services.now();
    const dataDate = result.dataDate ?? now.toISOString();
    const unchanged = options.known?.includes(result.fingerprint) ?? false;
    // A task's envelope carries the task's own credits (reserved at its start, settled by the task itself), a Hub
    // question its own (settled by the workflow that answered it).
    const credits: Credits = unchanged
      ? { debites: 0, restants: admission.restants }
      : billsItself(operation)
        ? (outputOf(result) as { credits: Credits }).credits
        : await bill(admission, result, now.getTime(), options);
    // A Hub question settled its credits in the worker: what its answer says is left is what the next answer says.
    if (operation.ownCredits && !unchanged && credits.restants !== null) {
      auth.noteDebit(caller.organisationId, caller.cleId, credits.debites, credits.restants);
    }
    const body = billsItself(operation) ? payloadOf(result) : withCredits(result, credits);
    let output = result.output;
    return {
      operation,
      get output() {
        return (output ??= outputOf(result));
      },
      credits,
      body,
      get json() {
        return body.toString();
      },
      fingerprint: result.fingerprint,
      unchanged,
      dataDate,
      dataAgeS: Math.max(0, Math.floor((now.getTime() - Date.parse(dataDate)) / 1000)) || 0,
      rate: admission.rate,
      requestId: admission.requestId,
      release: result.memory && giveBackOnce(result.memory),
    };
  }

  /** A function that gives `memory` back to the pool of bodies, once however often it is called. */
  function giveBackOnce(memory: ArrayBufferLike): () => void {
    let lent = true;
    return () => {
      if (lent) bodies.give(memory);
      lent = false;
    };
  }

  /** Debits a served answer by its price, unless the same answer was served to the organisation within 24 h. */
  async function bill(
    { operation, caller, restants, requestId }: Admission,
    result: Result,
    now: number,
    { billingKey, creditCap }: RunOptions,
  ): Promise<Credits> {
    const price = caller.sandbox ? 0 : result.price;
    const servedId = `${caller.organisationId}|${result.fingerprint}`;
    if (price === 0 || served.seen(servedId, now)) return { debites: 0, restants };
    if (creditCap !== undefined && price > creditCap) {
      throw new ApiError(
        'credits_insuffisants',
        `Cette réponse coûte ${price} crédits ; le plafond de la question n’en laisse que ${creditCap}.`,
      );
    }
    // A keyed debit is written alone (svc_debiter, which knows the key): the Hub's tool calls are few, and a retry of
    // one must find its debit already written.
    const debited = billingKey
      ? await keyedDebit(services.db, caller, operation.tool, price, requestId, result.fingerprint, billingKey)
      : await debiter.debit({
          organisationId: caller.organisationId,
          cleId: caller.cleId,
          credits: price,
          operation: operation.tool,
          requete: requestId,
          empreinte: result.fingerprint,
        });
    if (debited.issue === 'credits_insuffisants') {
      throw new ApiError(
        'credits_insuffisants',
        `Il reste ${debited.restants} crédits ; cette réponse en coûte ${price}.`,
      );
    }
    if (debited.issue === 'plafond_cle') throw new ApiError('plafond_cle', 'Plafond mensuel de la clé atteint.');
    if (debited.issue === 'organisation_absente') throw new ApiError('cle_invalide', 'Clé inconnue.');
    served.note(servedId, debited.serviLe ?? now);
    auth.noteDebit(caller.organisationId, caller.cleId, debited.debites, debited.restants);
    return { debites: debited.debites, restants: debited.restants };
  }

  return {
    admit,
    run,
    /** One call, whoever makes it: `tool` is the operation's name (its operationId). */
    async invoke(credential: Credential, tool: string, input: unknown, options: CallOptions = {}): Promise<Invocation> {
      const requestId = options.requestId ?? newRequestId();
      const operation = byId.get(tool);
      if (!operation) throw new ApiError('ressource_absente', `Aucune opération « ${tool} » au catalogue.`);
      const admission = await admit(credential, operation, requestId);
      // A tool of several paths (`ventes_commune`, by `insee` or `code_postal`) takes the way its input names; every
      // way is admitted alike.
      const ways = waysByTool.get(tool);
      if (!ways || ways.length === 1 || !isPlainObject(input)) return run(admission, input, options);
      let way: Operation;
      try {
        way = wayOf(ways, input);
      } catch (error) {
        throw refusal(error, requestId);
      }
      return run({ ...admission, operation: way }, input, options);
    },
    /** What a credential may call, without a call (the tools an MCP client is shown). */
    rights: auth.rights,
    /** A call that is no operation (an MCP message other than a tool call), against the per-minute rate only. */
    count: auth.count,
    /** Admin changes: keys and balances are read afresh. */
    forget: auth.forget,
    /** Stops what the pipeline runs in the background (the database's announcements, the purge of fingerprints). */
    close() {
      debiter.close();
      return auth.close();
    },
  };
}

export type Pipeline = ReturnType<typeof createPipeline>;

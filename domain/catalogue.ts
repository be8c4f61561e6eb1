import { z } from 'zod';
import type { QuestionDemandee } from './hub/types.ts';
import type { Db } from '../db/client.ts';
import type { Cursors } from '../lib/cursor.ts';
import type { OutboundHttp } from '../lib/outbound-http.ts';
import { ApiError, type ErrorCode, type FieldError } from './errors.ts';
import type { RenderPool } from './documents/pool.ts';
import type { FileDelivery } from './documents/telechargement.ts';
import { lireEntree } from './entrees.ts';

export const SCOPES = [
  'compte',
  'hub',
  'jeux',
  'documents',
  'plu',
  'territoire',
  'urbanisme',
  'flux',
  'estimation',
  'references',
  'entreprises',
  'pre_marche',
  'exports',
  'adresse',
  'webhooks',
  'lien_origine',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Access tiers, lowest first: an organisation reaches every tier up to its own. */
export const TIERS = ['usage', 'data', 'contrat'] as const;
export type Tier = (typeof TIERS)[number];

/** Units of a price: per successful call, per element returned, per 10 rows returned, per event delivered. */
export type Unit = 'appel' | 'element' | '10_lignes' | 'evenement';

/**
 * What a call changes besides the ledger, as a tool's client and the Hub are told:
 * - `lecture`: nothing a later call would see: it reads, computes, or runs a long read as a task. A read operation,
 *   which the Hub may call by default.
 * - `ajout`: adds something each time (a subscription, a generated file, a delivery sent): calling again adds again.
 * - `ecriture`: sets or removes what was there (the profile, a validated address, the memory, a subscription deleted):
 *   calling again with the same input changes nothing more.
 */
export type Effect = 'lecture' | 'ajout' | 'ecriture';

/** The `credits` block of every successful response. */
export const CreditsSchema = z
  .object({
    debites: z.number().int().min(0).describe('Crédits débités par cet appel (réservés pour une tâche en cours).'),
    restants: z
      .number()
      .int()
      .nullable()
      .describe('Crédits encore utilisables ce mois avant coupure ; null dans le bac à sable.'),
  })
  .describe('Crédits de l’appel.');

/**
 * The published shape of an object that a `champs` selection can reduce to some of its fields: every field still
 * described, none required, so that a reduced object is valid against the description (and against the clients
 * generated from it). `complet` says in the description when every field is served.
 */
export function selectable<T extends z.ZodObject>(schema: T, complet: string) {
  return schema.partial().describe(`${schema.description ?? ''} ${complet}`.trim());
}

/** A territory an operation's input names: what a pk_test_ key may ask only inside the frozen set. */
export type Territoire =
  { commune: string } | { code_postal: string } | { departement: string } | { region: string } | { iris: string };

/** Who is calling, as established by authentication. */
export interface Caller {
  organisationId: string;
  cleId: string;
  /** The personal account the key is attached to, or null for an organisation key. */
  compteId: string | null;
  /** pk_test_ key: served from the frozen dataset, never debited. */
  sandbox: boolean;
  /** Scopes opened to both the key and the organisation. */
  portees: Scope[];
}

/** Starts a task's engine (Temporal in production): the domain only knows this interface. */
export interface TaskEngine {
  /** Starts the task's workflow; a task already started (running or ended) is left as it is. */
  start(task: { id: string; operation: string }): Promise<void>;
  /** Asks a running task to stop (its activities are cancelled; its workflow cleans up). */
  cancel(taskId: string): Promise<void>;
}

/** The ends of tasks, as the database announces them to every instance (domain/taches/fins.ts). */
export interface TaskEnds {
  /** Resolves when the task has ended (or is gone), after `ms`, or when `signal` aborts, whichever comes first. */
  wait(taskId: string, ms: number, signal?: AbortSignal): Promise<void>;
}

/** The Hub's conversations (Temporal in production): the domain only knows this interface. */
export interface HubEngine {
  /**
   * Puts a question to a conversation, starting its workflow, or reviving it from `dernier` (the number of its last
   * question) when it has closed. Resolves with the question's number once it is answered (the answer is then in
   * the database); a refusal or a failure of the question is an ApiError.
   */
  poser(
    conversation: { id: string; compteId: string | null; dernier: () => Promise<number> },
    demande: QuestionDemandee,
  ): Promise<number>;
}

/** What a handler may use. Narrow on purpose: no HTTP, no Temporal. */
export interface Services {
  db: Db;
  outbound: OutboundHttp;
  cursors: Cursors;
  now: () => Date;
  /** The evening window of heavy reads, minutes since midnight Paris time; null: none; absent: 20:30-midnight. */
  creneauLourd?: { debut: number; fin: number } | null;
  /** The engine of the long operations; absent when the service runs without Temporal (they then answer 503). */
  tasks?: TaskEngine;
  /** What `attendre` and the synchronous long operations wait on (the application always provides it). */
  taskEnds?: TaskEnds;
  /** Generated files: storage and signed download links (generer_document answers 503 without it). */
  files?: FileDelivery;
  /** Threads laying out generated documents off the main loop (a shared pool when absent). */
  renderPool?: RenderPool;
  /** The Hub's conversations; absent without Temporal (questions then answer 503). */
  hub?: HubEngine;
}

export interface OperationContext {
  caller: Caller;
  requestId: string;
  /** The `Idempotency-Key` header, for task operations: the same key and body give back the same task. */
  idempotencyKey?: string;
  /** Aborted when the operation's time-out is reached: long work should stop. */
  signal: AbortSignal;
  services: Services;
}

export interface Operation<S extends z.ZodObject = z.ZodObject, O = unknown> {
  /** Tool name: the operationId, and the name of the operation as a Hub/MCP tool. */
  tool: string;
  method: 'GET' | 'POST' | 'PATCH';
  /** Path under /api/v1, `{name}` for path parameters. */
  path: string;
  /**
   * A second path of the same tool (e.g. `parcelle` for `/parcelles/{id_parcelle}/ventes`): declared as an operation
   * of its own with the same `tool`; its operationId is `<tool>_<variant>`.
   */
  variant?: string;
  summary: string;
  description: string;
  credits: number;
  unit: Unit;
  scope: Scope;
  tier: Tier;
  /** true: a pk_test_ key is served from the frozen dataset; false: 403 hors_bac_a_sable. */
  sandbox: boolean;
  /**
   * The territories an input names (communes, postal codes, départements, régions, IRIS), for an operation with a
   * sandbox: a pk_test_ key that names one outside the frozen set is refused 403 hors_bac_a_sable by the pipeline,
   * before the handler runs. An operation whose input names a territory otherwise (an address, a point) bounds it
   * in its handler.
   */
  territoires?: (input: z.output<S>) => Territoire[];
  /** Seconds a response may be served from memory; 0: never cached. */
  cacheS: number;
  /**
   * A field of the output that only dates the computation (`calcule_le`): two results that differ in it alone are
   * the same answer, with one fingerprint (ETag), debited once within 24 h however often it is computed again.
   */
  computedAt?: string;
  timeoutS: number;
  /** The operation needs a key attached to a personal account. */
  personalKey?: boolean;
  /**
   * What a call changes (see Effect). A GET reads (`lecture`) unless it says otherwise; any other method declares it,
   * since a body alone does not tell a computation from a change. Undeclared, it is taken for the worst: a change.
   */
  effect?: Effect;
  /**
   * Served over HTTP only, never as a tool of the Hub or of MCP (the specification keeps exports and downloads to
   * REST). Every other operation is also a tool (rule 9).
   */
  restOnly?: boolean;
  /**
   * The answer is a redirection (302) to the address this gives from the output (a pre-signed file address); the
   * JSON output is still the body, for clients that do not follow redirections.
   */
  redirect?: (output: O) => string;
  /**
   * The answer depends on the calling organisation (its contract), not only on the input: kept in the response memory
   * per organisation, never served to another.
   */
  cacheParOrganisation?: boolean;
  /**
   * One flat input object: path parameters come from the path, the other fields from the query string (GET) or the
   * JSON body (POST, PATCH). The same object is the input of the tool.
   */
  input: S;
  /** The payload of a success, without the `credits` block that the pipeline adds. */
  output: z.ZodType<O>;
  /**
   * The price of a result when it depends on what was served (estimer_bien_affine falling back to its deterministic
   * twin costs the twin's price): at most `credits`, which is what admission checks and the description announces.
   */
  price?: (output: O) => number;
  /** Number of priced units in a result, for units other than `appel`. */
  units?: (output: O) => number;
  /** Date of the data behind a result (AAAA-MM-JJ or ISO 8601); the time of the response when absent. */
  dataDate?: (output: O) => string | null;
  /**
   * A task operation: its output is the task envelope with the task's own `credits` block (reserved when the task
   * starts, debited on success, given back on failure), so the pipeline neither bills nor adds a block; a POST
   * answers 202 with `Location`, even when the task ended within `attendre` (the envelope then carries the result),
   * a GET of the task answers 200.
   */
  task?: boolean;
  /**
   * Runs on the task engine (`services.tasks`), like a task, though it answers in one request: where there is no
   * engine (the worker's own pipeline, which the Hub's tools go through) it can only refuse, so it is not offered.
   */
  needsTaskEngine?: boolean;
  /**
   * The operation settles its own credits, exactly once whatever the retries (a Hub question: its price and its
   * tools', by the workflow that answers it), and its output carries the `credits` block: the pipeline neither
   * bills nor adds one. Tasks do so too.
   */
  ownCredits?: boolean;
  /**
   * Another representation of a result, chosen by the request's `Accept` header (the generated file itself): it is
   * billed and headed like the JSON, and sent instead of it.
   */
  representation?: {
    types: string[];
    wanted(accept: string | undefined, output: O): boolean;
    read(services: Services, output: O): Promise<{ bytes: Uint8Array; headers: Record<string, string> }>;
  };
  /**
   * A batch variant: `POST <path without its path parameters>/lot` (batchPath) with `{"elements": [ … ]}`, each
   * element the operation's flat input, each served and billed as its own call (api/lots.ts).
   */
  lot?: boolean;
  /**
   * The output carries text that neither the service computed nor the caller wrote (reviews, documents, rule
   * quotations, company names, listing descriptions): text that may hold instructions. After the Hub's model has read
   * one, the question is no longer offered a tool that writes (domain/hub/agent.ts).
   */
  texteTiers?: boolean;
  /** Error codes specific to this operation, documented in its description (the common set is always documented). */
  errors?: ErrorCode[];
  handler: (input: z.output<S>, ctx: OperationContext) => Promise<O>;
}

/** Declares an operation with its types inferred: the single place where an operation is described. */
export function defineOperation<S extends z.ZodObject, O>(operation: Operation<S, O>): Operation<S, O> {
  return operation;
}

/** The name an operation is called by, over HTTP (its OpenAPI operationId) as through `invoke`: `<tool>_<variant>`. */
export function operationId(operation: Operation): string {
  return operation.variant ? `${operation.tool}_${operation.variant}` : operation.tool;
}

const paramsByPath = new Map<string, string[]>();

/** Path parameter names of a catalogue path (`/webhooks/{id}/test` → ['id']); read once per path, asked per call. */
export function pathParams(path: string): string[] {
  let names = paramsByPath.get(path);
  if (!names) {
    names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    paramsByPath.set(path, names);
  }
  return names;
}

/**
 * Where each field of an operation's flat input is given: its path, its query string (GET) or its body; a field
 * refused is located by it, whoever called.
 */
export function fieldPlace(operation: Operation): (field: string) => FieldError['emplacement'] {
  let place = placeByOperation.get(operation);
  if (!place) {
    const inPath = new Set(pathParams(operation.path));
    const elsewhere = operation.method === 'GET' ? 'requete' : 'corps';
    place = (field) => (inPath.has(field) ? 'chemin' : elsewhere);
    placeByOperation.set(operation, place);
  }
  return place;
}

const placeByOperation = new WeakMap<Operation, (field: string) => FieldError['emplacement']>();

/**
 * The input of an operation from its flat raw input (path parameters with the query string or the JSON body, or a
 * tool call's arguments): the operation's schema, under the rules every input obeys (domain/entrees.ts).
 */
export function parseInput<S extends z.ZodObject>(operation: Operation<S>, raw: unknown) {
  return lireEntree(operation.input, raw);
}

/** What a call changes: its declaration, else `lecture` for a GET and `ecriture` (the worst case) otherwise. */
export function effectOf(operation: Operation): Effect {
  return operation.effect ?? (operation.method === 'GET' ? 'lecture' : 'ecriture');
}

/** The price in words, as the description and the tools state it (« 5 crédit(s) par appel réussi »). */
export function priceText(operation: Operation): string {
  const per = {
    appel: 'appel réussi',
    element: 'élément renvoyé',
    '10_lignes': 'tranche de 10 lignes',
    evenement: 'événement livré',
  }[operation.unit];
  return `${operation.credits} crédit(s) par ${per}`;
}

/** The output carries its own `credits` block, settled by the operation (tasks, Hub questions). */
export function billsItself(operation: Operation): boolean {
  return operation.task === true || operation.ownCredits === true;
}

/** Credits a result costs, from the operation's price and unit. */
export function priceOf(operation: Operation, output: unknown): number {
  if (operation.price) return Math.min(operation.credits, operation.price(output));
  if (operation.unit === 'appel') return operation.credits;
  const units = operation.units?.(output) ?? 0;
  return operation.unit === '10_lignes' ? operation.credits * Math.ceil(units / 10) : operation.credits * units;
}

/**
 * The operations by tool: one tool per operation of the specification, whose several paths are declared as variants
 * (`ventes_commune`: by `insee` or by `code_postal`), the main path first. The ways of one tool are admitted alike:
 * a declaration whose variants differ in scope, tier, sandbox or personal key is refused here, when the catalogue is
 * read.
 */
export function operationsByTool(operations: Operation[]): Map<string, Operation[]> {
  const byTool = new Map<string, Operation[]>();
  for (const operation of operations) {
    const ways = byTool.get(operation.tool) ?? [];
    if (operation.variant) ways.push(operation);
    else ways.unshift(operation);
    byTool.set(operation.tool, ways);
  }
  for (const [tool, [main, ...others]] of byTool) {
    for (const other of others) {
      const same = (['scope', 'tier', 'sandbox', 'personalKey', 'restOnly'] as const).every(
        (k) => main![k] === other[k],
      );
      if (!same || main!.variant)
        throw new Error(`${tool} : ses chemins diffèrent d’admission, ou il n’a pas de chemin principal.`);
    }
  }
  return byTool;
}

const keysByWay = new WeakMap<Operation, string[]>();

/**
 * The fields that name a way of a tool: its path parameters and its required fields (`q` for an address search,
 * `lat` and `lon` for the reverse one).
 */
function wayKeys(way: Operation): string[] {
  let keys = keysByWay.get(way);
  if (!keys) {
    const required = Object.entries(way.input.shape as Record<string, z.ZodType>)
      .filter(([, field]) => !field.safeParse(undefined).success)
      .map(([name]) => name);
    keys = [...new Set([...pathParams(way.path), ...required])];
    keysByWay.set(way, keys);
  }
  return keys;
}

/**
 * The way of a tool that a flat input names: the one whose naming fields (wayKeys) it all gives, the one with most of
 * them when several do (`/modeles/{modele}` over `/modeles`). An input that names none, or two ways at once, is
 * refused field by field.
 */
export function wayOf(ways: Operation[], input: Record<string, unknown>): Operation {
  if (ways.length === 1) return ways[0]!;
  const given = (name: string) => input[name] !== undefined;
  const fitting = ways.filter((way) => wayKeys(way).every(given));
  const most = Math.max(...fitting.map((way) => wayKeys(way).length));
  const best = fitting.filter((way) => wayKeys(way).length === most);
  const forms = ways.map((way) => wayKeys(way).join(' + ') || '(aucun champ)').join(', ou ');
  const refuse = (message: string, champs: string[]) =>
    new ApiError('parametres_invalides', `${message[0]!.toUpperCase()}${message.slice(1)}.`, {
      erreurs: champs.map((champ) => ({ champ, emplacement: 'corps', message })),
    });
  const all = [...new Set(ways.flatMap(wayKeys))];
  if (best.length === 0) throw refuse(`une des formes d’appel est requise : ${forms}`, all);
  if (best.length > 1) throw refuse(`une seule forme d’appel à la fois : ${forms}`, all.filter(given));
  // The naming fields of another way, which this way does not take: said as such, rather than as unknown fields.
  const own = Object.keys(best[0]!.input.shape);
  const others = all.filter((name) => given(name) && !own.includes(name));
  if (others.length > 0) {
    throw refuse(`une seule forme d’appel à la fois : ${forms}`, [...wayKeys(best[0]!), ...others]);
  }
  return best[0]!;
}

/** The most elements a batch variant takes. */
export const LOT_MAX = 100;

/**
 * The path of an operation's batch variant: its path without its path parameters (which each element gives), then
 * `/lot`: `/adresses/{cle_ban}/ventes` → `/adresses/ventes/lot`.
 */
export function batchPath(operation: Operation): string {
  return `${operation.path.replace(/\/\{\w+\}/g, '')}/lot`;
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationId } from '../../domain/catalogue.ts';
import { ApiError } from '../../domain/errors.ts';
import { newRequestId, type Credential } from '../../domain/invoke.ts';
import { OPERATIONS } from '../../domain/operations.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { operationsEssai } from '../support/operations-essai.ts';

// Operations outside the catalogue, declared once in test/support: each reaches HTTP and `invoke` by its declaration
// alone.
const { toutes: OWN } = operationsEssai('invoke', 'essai-invoke');

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ operations: [...OPERATIONS, ...OWN] });
});
afterAll(async () => t?.close());

/** What a caller learns of one call, whatever the transport: comparable between HTTP and `invoke`. */
interface Outcome {
  status: number;
  body?: unknown;
  credits?: { debites: number; restants: number | null };
  fingerprint?: string;
  rate?: { limit: number; remaining: number };
  code?: string;
  detail?: string;
  erreurs?: unknown;
  requestId: string;
}

interface Call {
  /** Which key of the scenario calls. */
  key: string;
  tool: string;
  input: Record<string, unknown>;
  idempotencyKey?: string;
  /** The call holds the answer of this earlier step (If-None-Match over HTTP). */
  holds?: number;
}

// The detail of an erreur_interne names its request: compared without it.
const detailOf = (detail: string, requestId: string) => detail.replace(requestId, '<requete>');

/** A call over HTTP, built from the operation's declaration: path parameters, then query (GET) or JSON body. */
async function overHttp(cle: string | undefined, call: Call, held?: string): Promise<Outcome> {
  const operation = OWN.find((o) => operationId(o) === call.tool)!;
  const rest = { ...call.input };
  const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = String(rest[name]);
    delete rest[name];
    return encodeURIComponent(value);
  });
  const query = new URLSearchParams(Object.entries(rest).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const res = await t.app.inject({
    method: operation.method,
    url: `/api/v1${path}${operation.method === 'GET' && query ? `?${query}` : ''}`,
    headers: {
      ...(cle === undefined ? {} : { authorization: `Bearer ${cle}` }),
      ...(operation.method === 'GET' ? {} : { 'content-type': 'application/json' }),
      ...(call.idempotencyKey ? { 'idempotency-key': call.idempotencyKey } : {}),
      ...(held ? { 'if-none-match': held } : {}),
    },
    ...(operation.method === 'GET' ? {} : { payload: JSON.stringify(call.input) }),
  });
  const requestId = String(res.headers['svc-requete']);
  const rate = res.headers['ratelimit-limit']
    ? { limit: Number(res.headers['ratelimit-limit']), remaining: Number(res.headers['ratelimit-remaining']) }
    : undefined;
  if (res.statusCode >= 400) {
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = res.json();
    expect(problem.requete).toBe(requestId);
    if (problem.code === 'quota_minute') expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    return {
      status: res.statusCode,
      code: problem.code,
      detail: detailOf(problem.detail, requestId),
      erreurs: problem.erreurs,
      rate,
      requestId,
    };
  }
  const restants = res.headers['svc-credits-restants'];
  return {
    status: res.statusCode,
    body: res.statusCode === 304 ? undefined : res.json(),
    credits: {
      debites: Number(res.headers['svc-credits-debites']),
      restants: restants === undefined ? null : Number(restants),
    },
    fingerprint: String(res.headers.etag),
    rate,
    requestId,
  };
}

/** The same call through `invoke`. */
async function throughInvoke(credential: Credential, call: Call, held?: string): Promise<Outcome> {
  const requestId = newRequestId();
  try {
    const answer = await t.app.pipeline.invoke(credential, call.tool, call.input, {
      requestId,
      idempotencyKey: call.idempotencyKey,
      known: held ? [held] : [],
    });
    return {
      status: answer.unchanged ? 304 : 200,
      body: answer.unchanged ? undefined : JSON.parse(answer.json),
      credits: answer.credits,
      fingerprint: answer.fingerprint,
      rate: { limit: answer.rate.limit, remaining: answer.rate.remaining },
      requestId,
    };
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    const refused = error as ApiError;
    return {
      status: refused.status,
      code: refused.code,
      detail: detailOf(refused.message, requestId),
      erreurs: refused.erreurs,
      rate: refused.rate ? { limit: refused.rate.limit, remaining: refused.rate.remaining } : undefined,
      requestId,
    };
  }
}

type Transport = 'http' | 'invoke' | 'invoke par id de clé';

/** Organisations and keys of the scenario, made anew for each transport so that each starts from the same state. */
async function keysOfScenario() {
  const a = await t.organisation({ acces: 'usage' });
  const test = await t.admin('POST', `/organisations/${a.id}/cles`, { mode: 'test' });
  const perso = await t.admin('POST', `/organisations/${a.id}/cles`, { mode: 'live', personnelle: true });
  const plafond = await t.admin('POST', `/organisations/${a.id}/cles`, { mode: 'live', plafond_mensuel: 0 });
  const revoquee = await t.admin('POST', `/organisations/${a.id}/cles`, { mode: 'live' });
  await t.admin('POST', `/cles/${revoquee.body.id}/revocation`);
  const b = await t.organisation({ acces: 'usage', quota_minute: 2 });
  const c = await t.organisation({ acces: 'usage' });
  await t.admin('POST', `/organisations/${c.id}/credits`, { credits: -500, motif: 'épuisement pour le test' });
  const d = await t.organisation({ acces: 'usage' }, { portees: ['compte'] });
  const e = await t.organisation({ acces: 'usage' });
  await t.admin('PATCH', `/organisations/${e.id}`, { statut: 'suspendue' });
  return {
    organisations: [a.id, b.id, c.id],
    keys: {
      a: { cle: a.cle, id: a.cleId },
      test: { cle: test.body.cle, id: test.body.id },
      perso: { cle: perso.body.cle, id: perso.body.id },
      plafond: { cle: plafond.body.cle, id: plafond.body.id },
      revoquee: { cle: revoquee.body.cle, id: revoquee.body.id },
      b: { cle: b.cle, id: b.cleId },
      c: { cle: c.cle, id: c.cleId },
      d: { cle: d.cle, id: d.cleId },
      e: { cle: e.cle, id: e.cleId },
      inconnue: { cle: `pk_live_${'x'.repeat(32)}`, id: '00000000-0000-4000-8000-000000000000' },
    } as Record<string, { cle: string; id: string }>,
  };
}

const SCENARIO: Call[] = [
  { key: 'absente', tool: 'echo_invoke', input: { id: 'abc' } },
  { key: 'inconnue', tool: 'echo_invoke', input: { id: 'abc' } },
  { key: 'revoquee', tool: 'echo_invoke', input: { id: 'abc' } },
  { key: 'e', tool: 'echo_invoke', input: { id: 'abc' } },
  { key: 'd', tool: 'echo_invoke', input: { id: 'abc' } },
  { key: 'a', tool: 'personnel_invoke', input: { id: 'abc' } },
  { key: 'a', tool: 'contrat_invoke', input: { id: 'abc' } },
  { key: 'test', tool: 'ecrire_invoke', input: { texte: 'ab' } },
  { key: 'test', tool: 'echo_invoke', input: { id: 'abc' } },
  { key: 'test', tool: 'echo_invoke', input: { id: 'gel1' } },
  { key: 'c', tool: 'echo_invoke', input: { id: 'abc' } },
  { key: 'plafond', tool: 'ecrire_invoke', input: { texte: 'ab' } },
  { key: 'a', tool: 'echo_invoke', input: { id: 'ab', n: -1 } },
  { key: 'a', tool: 'ecrire_invoke', input: { texte: 'a', nombre: 1.5, inconnu: 1 } },
  { key: 'a', tool: 'echo_invoke', input: { id: 'abc' }, idempotencyKey: 'deux mots' },
  { key: 'a', tool: 'echo_invoke', input: { id: 'absent' } },
  { key: 'a', tool: 'lent_invoke', input: {} },
  { key: 'a', tool: 'panne_invoke', input: {} },
  { key: 'a', tool: 'echo_invoke', input: { id: 'abc', n: 5 } },
  { key: 'a', tool: 'echo_invoke', input: { id: 'abc', n: 5 } },
  { key: 'a', tool: 'echo_invoke', input: { id: 'abc', n: 5 }, holds: 18 },
  { key: 'a', tool: 'liste_invoke', input: { n: 7 } },
  { key: 'a', tool: 'ecrire_invoke', input: { texte: 'abc' } },
  { key: 'perso', tool: 'personnel_invoke', input: { id: 'abc' } },
  { key: 'b', tool: 'echo_invoke', input: { id: 'abc', n: 1 } },
  { key: 'b', tool: 'echo_invoke', input: { id: 'abc', n: 2 } },
  { key: 'b', tool: 'echo_invoke', input: { id: 'abc', n: 3 } },
];

/** Runs the scenario over one transport: what the caller was told at each step, and what the ledger wrote. */
async function play(transport: Transport) {
  const { organisations, keys } = await keysOfScenario();
  const outcomes: Outcome[] = [];
  for (const call of SCENARIO) {
    const key = keys[call.key];
    const held = call.holds === undefined ? undefined : outcomes[call.holds].fingerprint;
    if (transport === 'http') outcomes.push(await overHttp(key?.cle, call, held));
    else if (transport === 'invoke') outcomes.push(await throughInvoke({ cle: key?.cle }, call, held));
    else outcomes.push(await throughInvoke(key ? { cleId: key.id } : { cle: undefined }, call, held));
  }
  const { rows } = await t.db.query(
    `SELECT organisation_id, genre, credits, gratuits, inclus, factures, operation, requete
       FROM mouvements WHERE organisation_id = ANY($1) ORDER BY id`,
    [organisations],
  );
  // Each movement by the organisation of the scenario and the step that caused it (none for grants).
  const ledger = rows.map(({ organisation_id: organisation, requete, ...movement }) => ({
    ...movement,
    organisation: organisations.indexOf(organisation),
    etape: requete === null ? null : outcomes.findIndex((o) => o.requestId === requete),
  }));
  return { outcomes: outcomes.map(({ requestId: _, ...outcome }) => outcome), ledger };
}

describe('invoke: the pipeline of every caller', () => {
  it('answers, refuses and debits through invoke exactly as over HTTP, by key or by key id', async () => {
    const http = await play('http');
    // What HTTP tells is the reference, checked here so that two transports cannot agree on a wrong answer.
    expect(http.outcomes.map((o) => o.code ?? o.status)).toEqual([
      'cle_absente',
      'cle_invalide',
      'cle_invalide',
      'organisation_suspendue',
      'portee_insuffisante',
      'portee_insuffisante',
      'palier_insuffisant',
      'hors_bac_a_sable',
      'hors_bac_a_sable',
      200,
      'credits_insuffisants',
      'plafond_cle',
      'parametres_invalides',
      'parametres_invalides',
      'parametres_invalides',
      'ressource_absente',
      'delai_depasse',
      'erreur_interne',
      200,
      200,
      304,
      200,
      200,
      200,
      200,
      200,
      'quota_minute',
    ]);
    expect(http.outcomes[9].body).toEqual({ id: 'gel1', n: 1, credits: { debites: 0, restants: null } });
    expect(http.outcomes[18].body).toEqual({ id: 'abc', n: 5, credits: { debites: 2, restants: 498 } });
    expect(http.outcomes[19].credits).toEqual({ debites: 0, restants: 498 });
    expect(http.outcomes[20].credits).toEqual({ debites: 0, restants: 498 });
    expect(http.outcomes[21].credits).toEqual({ debites: 7, restants: 491 });
    expect(http.outcomes[26].rate).toEqual({ limit: 2, remaining: 0 });
    expect(http.ledger.filter((m) => m.genre === 'debit')).toEqual([
      expect.objectContaining({ organisation: 0, credits: -2, operation: 'echo_invoke', etape: 18 }),
      expect.objectContaining({ organisation: 0, credits: -7, operation: 'liste_invoke', etape: 21 }),
      expect.objectContaining({ organisation: 0, credits: -1, operation: 'ecrire_invoke', etape: 22 }),
      expect.objectContaining({ organisation: 1, credits: -2, operation: 'echo_invoke', etape: 24 }),
      expect.objectContaining({ organisation: 1, credits: -2, operation: 'echo_invoke', etape: 25 }),
    ]);

    expect(await play('invoke')).toEqual(http);
    expect(await play('invoke par id de clé')).toEqual(http);
  });

  it('shares one ledger and one balance between transports: 100 concurrent calls with 10 credits debit 10', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 1000 });
    await t.admin('POST', `/organisations/${org.id}/credits`, { credits: -490, motif: 'il en reste 10' });
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => {
        const call: Call = { key: 'a', tool: 'ecrire_invoke', input: { texte: 'x'.repeat(i + 2) } };
        return i % 2 ? overHttp(org.cle, call) : throughInvoke({ cle: org.cle }, call);
      }),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(10);
    expect(results.filter((r) => r.code === 'credits_insuffisants')).toHaveLength(90);
    const { rows } = await t.db.query(
      `SELECT sum(credits)::int AS total, count(*) FILTER (WHERE genre = 'debit')::int AS debits
         FROM mouvements WHERE organisation_id = $1`,
      [org.id],
    );
    expect(rows[0]).toEqual({ total: 0, debits: 10 });
  });

  it('does not debit again through one transport an answer served through the other', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const call: Call = { key: 'a', tool: 'echo_invoke', input: { id: 'abc', n: 3 } };
    expect((await overHttp(org.cle, call)).credits).toEqual({ debites: 2, restants: 498 });
    expect((await throughInvoke({ cle: org.cle }, call)).credits).toEqual({ debites: 0, restants: 498 });
  });

  it('reaches every operation of the catalogue under its operationId, as the OpenAPI description names it', async () => {
    const openapi = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    // The catalogue's operations, not the routes outside it (download links, /mcp): those carry `x-svc-outil`.
    const ids = Object.values(openapi.paths as Record<string, Record<string, { operationId: string }>>)
      .flatMap((methods) => Object.values(methods).filter((o) => 'x-svc-outil' in o))
      .map((o) => o.operationId);
    expect(ids).toHaveLength(OPERATIONS.length + OWN.length);
    for (const id of ids) {
      await expect(t.app.pipeline.invoke({ cle: undefined }, id, {}), id).rejects.toMatchObject({
        code: 'cle_absente',
      });
    }
    await expect(t.app.pipeline.invoke({ cle: undefined }, 'outil_inconnu', {})).rejects.toMatchObject({
      code: 'ressource_absente',
    });
  });
});

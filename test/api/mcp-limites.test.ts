import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOT_MCP_MAX, REFUS_MCP } from '../../api/mcp.ts';
import { ApiError } from '../../domain/errors.ts';
import { PROFONDEUR_MAX } from '../../domain/entrees.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// What one MCP request may cost the service: each of its messages is a call of the organisation, a batch is short and
// only where the protocol has them, and an input nested too deep is refused as a parameter, never a 500.

// The clock is fixed: the per-minute quota is counted by calendar minute, and a test must never straddle two.
const clock = Date.now();

let t: TestApp;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  t = await createTestApp({ services: { now: () => new Date(clock) } });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await t?.close();
});

const TAXE = { insee: '33234', surface_taxable_creee_m2: 120, residence_principale: true };

type Reponse = { id: number; result?: any; error?: { code: number; message: string; data?: any } };

/** One POST to /mcp as a client of protocol `version` writes it, and the JSON-RPC answers it streams back. */
async function mcp(cle: string, body: unknown, version = '2025-03-26') {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${cle}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': version,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const reponses: Reponse[] = res.headers.get('content-type')?.startsWith('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)))
    : [];
  return { status: res.status, text, reponses, bytes: Buffer.byteLength(text) };
}

const message = (id: number, method: string, params?: unknown) => ({ jsonrpc: '2.0', id, method, params });
const listes = (from: number, n: number) => Array.from({ length: n }, (_, i) => message(from + i, 'tools/list'));

async function connect(cle: string): Promise<Client> {
  const client = new Client({ name: 'test-mcp', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${cle}` } },
    }),
  );
  clients.push(client);
  return client;
}

/** `depth` levels of lists and objects, alternating, around a number: the value itself is the first level. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = level % 2 ? { x: value } : [value];
  return value;
}

describe('every message of an MCP request is a call', () => {
  it('serves no more tools/list than the organisation’s quota, refusing the others as HTTP refuses', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 5 });
    // Twenty tools/list in two batches (a batch holds 10 at most), where the quota allows 5 calls this minute.
    const premier = await mcp(org.cle, listes(1, 10));
    const second = await mcp(org.cle, listes(11, 10));
    expect(premier.status).toBe(200);
    expect(second.status).toBe(200);
    const reponses = [...premier.reponses, ...second.reponses];
    expect(reponses.map((r) => r.id).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const servies = reponses.filter((r) => r.result);
    const refusees = reponses.filter((r) => r.error);
    expect(servies.length).toBe(5);
    for (const r of servies) expect(r.result.tools.length).toBeGreaterThan(0);
    expect(refusees.length).toBe(15);
    // The HTTP API's refusal, word for word: its code in the problem carried by the error, its detail as the message.
    const http = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, TAXE);
    expect(http.statusCode).toBe(429);
    for (const r of refusees) {
      expect(r.error).toMatchObject({ code: REFUS_MCP, message: http.json().detail });
      expect(r.error!.data).toMatchObject({ code: 'quota_minute', status: 429, title: http.json().title });
    }
    // A tool call over the quota is the tool's refusal, with the same code.
    const appel = await mcp(org.cle, message(21, 'tools/call', { name: 'taxe_amenagement', arguments: TAXE }));
    expect(appel.reponses[0]!.result.isError).toBe(true);
    expect(JSON.parse(appel.reponses[0]!.result.content[0].text)).toMatchObject({ code: 'quota_minute' });
  });

  it('counts the messages of a client’s exchange: past the quota, even listing the tools is refused', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 2 });
    // initialize, then tools/list: the two calls of the minute.
    const client = await connect(org.cle);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await expect(client.listTools()).rejects.toThrow(/Quota de 2 appels par minute/);
  });

  it('refuses a batch of more than 10 messages as a whole, and any batch under 2025-06-18', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 10 });
    const trop = await mcp(org.cle, listes(1, LOT_MCP_MAX + 1));
    expect(trop.status).toBe(400);
    expect(JSON.parse(trop.text)).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Lot JSON-RPC de 11 messages : 10 au plus par requête.' },
    });
    // Batches left the protocol in 2025-06-18.
    const recent = await mcp(org.cle, listes(1, 2), '2025-06-18');
    expect(recent.status).toBe(400);
    expect(JSON.parse(recent.text).error).toMatchObject({ code: -32600, message: expect.stringMatching(/2025-06-18/) });
    // Nothing of them was counted: the minute's 10 calls are all there for a batch of 10.
    const servi = await mcp(org.cle, listes(1, LOT_MCP_MAX));
    expect(servi.reponses.filter((r) => r.result?.tools).length).toBe(10);
  });

  it('answers tool calls whose arguments are no object with -32602 in French, never -32603', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const mauvais = ['33234', [TAXE], 12, null, true];
    const { status, reponses } = await mcp(
      org.cle,
      mauvais.map((args, i) => message(i + 1, 'tools/call', { name: 'taxe_amenagement', arguments: args })),
    );
    expect(status).toBe(200);
    expect(reponses.length).toBe(mauvais.length);
    for (const r of reponses) {
      expect(r.error!.code).toBe(-32602);
      expect(r.error!.message).toMatch(/^Les arguments de l’outil \(`params.arguments`\) sont un objet JSON, pas /);
    }
    expect(reponses.find((r) => r.id === 1)!.error!.message).toMatch(/pas un texte\.$/);
    expect(reponses.find((r) => r.id === 2)!.error!.message).toMatch(/pas une liste\.$/);
    // Without a name, the same.
    const sansNom = await mcp(org.cle, message(9, 'tools/call', { arguments: TAXE }));
    expect(sansNom.reponses[0]!.error).toMatchObject({ code: -32602, message: expect.stringMatching(/params.name/) });
    // Nothing was called, nothing debited.
    const releve = await t.admin('GET', `/organisations/${org.id}/releve?limite=100`);
    expect(releve.body.mouvements.filter((m: { genre: string }) => m.genre === 'debit')).toEqual([]);
  });
});

describe('nesting depth', () => {
  it('refuses a body nested 3 000 deep with 400 parametres_invalides on its field, not a 500', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const res = await t.call('POST', '/estimations', org.cle, {
      type: 'appartement',
      surface: 50,
      insee: '33234',
      adresse: nested(3000),
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'parametres_invalides',
      erreurs: [{ champ: 'adresse', emplacement: 'corps', message: expect.stringMatching(/32 niveaux/) }],
    });
    // Lists nested 400 000 deep, about as deep as a body under the size cap can go (written by hand: JSON.stringify
    // itself overflows there): the same refusal.
    const profond = await t.app.inject({
      method: 'POST',
      url: '/api/v1/estimations',
      headers: { authorization: `Bearer ${org.cle}`, 'content-type': 'application/json' },
      payload: `{"type":"appartement","surface":50,"adresse":${'['.repeat(400_000)}${']'.repeat(400_000)}}`,
    });
    expect(profond.statusCode, profond.body).toBe(400);
    expect(profond.json()).toMatchObject({ code: 'parametres_invalides', erreurs: [{ champ: 'adresse' }] });
  });

  it('takes 32 levels and refuses 33, counting the body as the first', async () => {
    const org = await t.organisation({ acces: 'usage' });
    // The body is the first level: a field holding PROFONDEUR_MAX - 1 levels is as deep as allowed.
    const permis = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, {
      ...TAXE,
      note: nested(PROFONDEUR_MAX - 1),
    });
    expect(permis.statusCode, permis.body).toBe(200);
    const refuse = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, { ...TAXE, note: nested(PROFONDEUR_MAX) });
    expect(refuse.statusCode).toBe(400);
    expect(refuse.json().erreurs).toEqual([
      { champ: 'note', emplacement: 'corps', message: expect.stringMatching(/Imbrication trop profonde/) },
    ]);
    // Nested 20 deep, a field the operation ignores is still just ignored.
    const vingt = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, { ...TAXE, note: nested(20) });
    expect(vingt.statusCode).toBe(200);
  });

  it('refuses tool arguments nested 3 000 deep as a tool error with parametres_invalides', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const client = await connect(org.cle);
    const result = await client.callTool({ name: 'taxe_amenagement', arguments: { ...TAXE, note: nested(3000) } });
    expect(result.isError).toBe(true);
    const problem = JSON.parse((result.content as Array<{ text: string }>)[0]!.text);
    expect(problem).toMatchObject({ code: 'parametres_invalides', erreurs: [{ champ: 'note' }] });
    // The same call, not nested, is served: the refusal was the nesting's.
    expect((await client.callTool({ name: 'taxe_amenagement', arguments: TAXE })).isError).toBeFalsy();
  });

  it('refuses it on the path of the Hub’s tool calls (invoke) as a refusal, not a fault', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const call = t.app.pipeline.invoke({ cleId: org.cleId }, 'estimer_bien', {
      type: 'appartement',
      surface: 50,
      insee: '33234',
      pieces: nested(3000),
    });
    await expect(call).rejects.toBeInstanceOf(ApiError);
    await expect(call).rejects.toMatchObject({ code: 'parametres_invalides', erreurs: [{ champ: 'pieces' }] });
  });
});

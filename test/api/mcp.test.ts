import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationId } from '../../domain/catalogue.ts';
import { OPERATIONS } from '../../domain/operations.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// Tasks are started by an engine that does nothing: a task stays `en_attente`, which is all a tool call of a task
// operation needs to show (its envelope, its reservation, the tool that reads it).
const idleEngine = { start: async () => {}, cancel: async () => {} };

let t: TestApp;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  t = await createTestApp({ services: { tasks: idleEngine } });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await t?.close();
});

/** The official SDK's client on /mcp with a key, as an MCP host configured with the header would connect. */
async function connect(cle: string): Promise<Client> {
  const client = new Client({ name: 'test-mcp', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${cle}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** The ledger of an organisation, oldest first, without what differs between two organisations' identical calls. */
async function ledger(organisationId: string): Promise<Array<Record<string, any>>> {
  const releve = await t.admin('GET', `/organisations/${organisationId}/releve?limite=100`);
  expect(releve.status).toBe(200);
  return (releve.body.mouvements as Array<Record<string, any>>)
    .reverse()
    .map(({ id: _id, le: _le, cle_id: _cle, requete, ...rest }) => ({
      ...rest,
      requete: requete === null ? null : 'x',
    }));
}

/** The requests of each movement of an organisation's ledger. */
async function requests(organisationId: string): Promise<Array<string | null>> {
  const releve = await t.admin('GET', `/organisations/${organisationId}/releve?limite=100`);
  return (releve.body.mouvements as Array<{ requete: string | null }>).map((m) => m.requete);
}

const TAXE = { insee: '33234', surface_taxable_creee_m2: 120, residence_principale: true };

/** A refused tool call's problem, from its text content. */
function problemOf(result: Awaited<ReturnType<Client['callTool']>>) {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const [content] = result.content as Array<{ type: string; text: string }>;
  expect(content.type).toBe('text');
  return JSON.parse(content.text) as { code: string; title: string; detail: string; status: number; requete: string };
}

describe('the MCP endpoint', () => {
  it('lists, to a key of every scope, every operation it may call, with the catalogue’s names and schemas', async () => {
    const org = await t.organisation({ acces: 'usage' }, { personnelle: true });
    const client = await connect(org.cle);
    expect(client.getServerVersion()).toMatchObject({ name: 'svc-immobilier' });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name).sort();
    // A usage organisation: every operation but the Data tier's (webhooks); a personal key: the account's too.
    // One tool per operation of the catalogue, under its name: the several paths of one (`ventes_commune`) in one.
    const expected = [...new Set(OPERATIONS.filter((o) => o.tier === 'usage').map((o) => o.tool))].sort();
    expect(names).toEqual(expected);
    // The same schemas as the OpenAPI description: input fields as its parameters and body, output as its response.
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    for (const tool of tools) {
      const [pathItem, method] = Object.entries(doc.paths as Record<string, Record<string, any>>)
        .flatMap(([p, item]) => Object.entries(item).map(([m, op]) => [p, m, op] as const))
        .filter(([, , op]) => op.operationId === tool.name)
        .map(([p, m]) => [p, m] as const)[0];
      const op = doc.paths[pathItem][method];
      const success = op.responses['200'] ?? op.responses['202'];
      const published: Record<string, unknown> = {
        ...Object.fromEntries((op.parameters ?? []).map((p: any) => [p.name, p.schema])),
        ...(op.requestBody?.content['application/json'].schema.properties ?? {}),
      };
      if (OPERATIONS.filter((o) => o.tool === tool.name).length === 1) {
        expect(tool.outputSchema, tool.name).toEqual(success.content['application/json'].schema);
        expect(tool.inputSchema.properties, tool.name).toEqual(published);
      } else {
        // A tool of several paths: the fields of each, its main path's among them.
        expect(tool.inputSchema.properties, tool.name).toMatchObject(published);
      }
      expect(tool.description, tool.name).toContain(op.summary);
      expect(tool.title).toBe(op.summary);
    }
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('ventes_adresse')!.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    expect(byName.get('profil_investisseur_modifier')!.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(byName.get('generer_document')!.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: false });
  });

  it('calls a tool of several paths by the way its input names, and refuses two ways at once field by field', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const client = await connect(org.cle);
    const parCode = await client.callTool({ name: 'ventes_commune', arguments: { code_postal: '33360' } });
    const direct = await t.call('GET', '/codes-postaux/33360/ventes', org.cle);
    expect(direct.statusCode, direct.body).toBe(200);
    expect(parCode.isError ?? false, JSON.stringify(parCode.content)).toBe(false);
    const { credits: _c, ...servi } = parCode.structuredContent as Record<string, unknown>;
    const { credits: _d, ...attendu } = direct.json();
    expect(servi).toEqual(attendu);
    const deux = problemOf(
      await client.callTool({ name: 'ventes_commune', arguments: { insee: '33234', code_postal: '33360' } }),
    );
    expect(deux.code).toBe('parametres_invalides');
    expect((deux as any).erreurs.map((e: any) => e.champ).sort()).toEqual(['code_postal', 'insee']);
    // A path's variant is no tool name.
    await expect(
      client.callTool({ name: 'ventes_commune_code_postal', arguments: { code_postal: '33360' } }),
    ).rejects.toThrow(/ventes_commune_code_postal/);
  });

  it('calls a tool through the pipeline: the HTTP answer, billed by the same ledger at the same price', async () => {
    // Two new organisations, the same question: one over MCP, the other over HTTP.
    const viaMcp = await t.organisation({ acces: 'usage' });
    const viaHttp = await t.organisation({ acces: 'usage' });
    const client = await connect(viaMcp.cle);
    const result = await client.callTool({ name: 'taxe_amenagement', arguments: TAXE });
    expect(result.isError).toBeFalsy();
    const http = await t.call('POST', '/fiscal/taxe-amenagement', viaHttp.cle, TAXE);
    expect(http.statusCode).toBe(200);
    expect(result.structuredContent).toEqual(http.json());
    expect(result.structuredContent).toMatchObject({ credits: { debites: 1, restants: 499 } });
    // The text is the very JSON an HTTP client reads.
    const [content] = result.content as Array<{ type: string; text: string }>;
    expect(JSON.parse(content.text)).toEqual(http.json());
    // One debit each, of the same price, for the same operation; the call's id is the ledger's `requete`.
    expect(await ledger(viaMcp.id)).toEqual(await ledger(viaHttp.id));
    expect((await ledger(viaMcp.id)).filter((m) => m.genre === 'debit')).toMatchObject([
      { credits: -1, operation: 'taxe_amenagement' },
    ]);
    expect(await requests(viaMcp.id)).toContain((result._meta as Record<string, string>)['svc/requete']);
    // The identical answer again within 24 h is not debited, as over HTTP.
    const again = await client.callTool({ name: 'taxe_amenagement', arguments: TAXE });
    const httpAgain = await t.call('POST', '/fiscal/taxe-amenagement', viaHttp.cle, TAXE);
    expect(again.structuredContent).toMatchObject({ credits: { debites: 0, restants: 499 } });
    expect(again.structuredContent).toEqual(httpAgain.json());
  });

  it('hides a tool whose scope the key lacks, and refuses its call with the scope’s code, unbilled', async () => {
    const org = await t.organisation({ acces: 'usage' }, { portees: ['adresse'] });
    const client = await connect(org.cle);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    expect(tools.every((tool) => OPERATIONS.find((o) => operationId(o) === tool.name)!.scope === 'adresse')).toBe(true);
    expect(tools.map((tool) => tool.name)).not.toContain('taxe_amenagement');
    const before = await ledger(org.id);
    const refused = await client.callTool({ name: 'taxe_amenagement', arguments: TAXE });
    const problem = problemOf(refused);
    const http = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, TAXE);
    expect(http.statusCode).toBe(403);
    expect(problem).toMatchObject({ code: 'portee_insuffisante', status: 403, detail: http.json().detail });
    expect(problem.title).toBe(http.json().title);
    expect(problem.requete).toBe((refused._meta as Record<string, string>)['svc/requete']);
    expect(await ledger(org.id)).toEqual(before);
  });

  it('refuses bad arguments, a missing credit, a sandbox key off its sandbox as the pipeline does', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const client = await connect(org.cle);
    const invalid = problemOf(await client.callTool({ name: 'taxe_amenagement', arguments: { insee: 12 } }));
    expect(invalid.code).toBe('parametres_invalides');
    expect((invalid as unknown as { erreurs: Array<{ champ: string }> }).erreurs.map((e) => e.champ)).toContain(
      'insee',
    );
    // A name that is no tool is a protocol error, not a tool result.
    await expect(client.callTool({ name: 'pas_un_outil', arguments: {} })).rejects.toThrow(/pas_un_outil/);

    const test = await t.organisation({ acces: 'usage' }, { mode: 'test' });
    const sandbox = await connect(test.cle);
    const listed = (await sandbox.listTools()).tools.map((tool) => tool.name);
    expect(listed).toEqual(
      OPERATIONS.filter((o) => !o.variant && o.sandbox && o.tier === 'usage' && !o.personalKey).map(operationId),
    );
    const served = await sandbox.callTool({ name: 'taxe_amenagement', arguments: TAXE });
    expect(served.structuredContent).toMatchObject({ credits: { debites: 0, restants: null } });
    const outside = await sandbox.callTool({ name: 'ventes_adresse', arguments: { cle_ban: '33234_0160_00012' } });
    expect(problemOf(outside).code).toBe('hors_bac_a_sable');
  });

  it('answers a task operation with its envelope, which the result tool reads as HTTP does', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const client = await connect(org.cle);
    const started = await client.callTool({ name: 'lire_plu', arguments: { lat: 44.79, lon: -0.49 } });
    expect(started.isError, JSON.stringify(started.content)).toBeFalsy();
    const envelope = started.structuredContent as { tache: { id: string; statut: string }; credits: unknown };
    expect(envelope.tache.statut).toBe('en_attente');
    expect(envelope.credits).toEqual({ debites: 60, restants: 440 });
    const read = await client.callTool({ name: 'resultat_lire_plu', arguments: { tache: envelope.tache.id } });
    const http = await t.call('GET', `/urbanisme/reglements/${envelope.tache.id}`, org.cle);
    expect(read.structuredContent).toEqual(http.json());
    expect((read.structuredContent as { tache: { id: string } }).tache.id).toBe(envelope.tache.id);
  });

  it('refuses a request without a valid key before reading it, with the REST API’s problem', async () => {
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    for (const [authorization, code] of [
      [undefined, 'cle_absente'],
      ['Bearer pk_live_0123456789abcdef0123456789abcdef', 'cle_invalide'],
      ['Basic abc', 'cle_invalide'],
    ] as const) {
      const res = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { ...headers, ...(authorization ? { authorization } : {}) },
        body: initialize,
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await res.json()) as { code: string };
      expect(problem.code).toBe(code);
      const rest = await fetch(`${base}/api/v1/fiscal/taxe-amenagement`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify(TAXE),
      });
      expect(rest.status).toBe(401);
      expect(((await rest.json()) as { code: string }).code).toBe(code);
    }
    // The SDK's client without the header fails to connect.
    const client = new Client({ name: 'test-mcp', version: '1.0.0' });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))).rejects.toThrow();
  });

  it('answers GET and DELETE with 405 (no stream, no session), a body over the cap with 413', async () => {
    const org = await t.organisation({ acces: 'usage' });
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${base}/mcp`, {
        method,
        headers: { authorization: `Bearer ${org.cle}`, accept: 'text/event-stream' },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
    const huge = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { x: 'a'.repeat(1_100_000) } });
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${org.cle}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: huge,
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { code: string }).code).toBe('corps_trop_lourd');
  });

  it('passes the conformance scenarios server-initialize, tools-list and ping', async () => {
    // The conformance CLI cannot send a key: a loopback proxy adds the header, as an MCP host configured with it does.
    const org = await t.organisation({ acces: 'usage' });
    const target = new URL(base);
    const proxy = http.createServer((req, res) => {
      const upstream = http.request(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: target.host, authorization: `Bearer ${org.cle}` },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    // The CLI is the package's `bin`, run by this very Node.
    const manifest = createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json');
    const cli = path.join(
      path.dirname(manifest),
      (JSON.parse(readFileSync(manifest, 'utf8')) as { bin: { conformance: string } }).bin.conformance,
    );
    const conformance = async (url: string, scenario: string) => {
      const run = await promisify(execFile)(process.execPath, [cli, 'server', '--url', url, '--scenario', scenario], {
        timeout: 60_000,
      }).catch((error: { code: number; stdout: string; stderr: string }) => error);
      return { code: 'code' in run ? run.code : 0, output: `${run.stdout}\n${run.stderr}` };
    };
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
      for (const scenario of ['server-initialize', 'tools-list', 'ping']) {
        const { code, output } = await conformance(url, scenario);
        expect(code, `${scenario}\n${output}`).toBe(0);
        expect(output, scenario).toMatch(/Passed: 1\/1, 0 failed, 0 warnings/);
      }
      // Straight to the service, without the proxy's header: refused, so the scenarios above ran with the key.
      const direct = await conformance(`${base}/mcp`, 'ping');
      expect(direct.code).not.toBe(0);
      expect(direct.output).toMatch(/Passed: 0\/1/);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  }, 120_000);
});

import { createServer, type IncomingMessage, type Server } from 'node:http';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';

// Stripe's own verifier, a standard one written by others, checks our signatures: header `t=…,v1=…`.
const stripe = new Stripe('sk_test_unused');

let t: TestApp;
let strict: TestApp;
let receiver: Server;
let receiverUrl: string;
const received: Array<{ headers: IncomingMessage['headers']; body: string }> = [];

beforeAll(async () => {
  t = await createTestApp();
  strict = await createTestApp({ env: { OUTBOUND_ALLOW_LOOPBACK: 'false' } });
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(req.url === '/panne' ? 500 : 204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
});
afterAll(async () => {
  await t?.close();
  await strict?.close();
  receiver?.close();
});

describe('webhooks over HTTP', () => {
  it('delivers a signed test that a standard Stripe-style verifier accepts, with the secret shown only once', async () => {
    const org = await t.organisation({ acces: 'data' });
    const created = await t.call('POST', '/webhooks', org.cle, {
      url: `${receiverUrl}/ok`,
      genres: ['tache.terminee'],
    });
    expect(created.statusCode, created.body).toBe(200);
    const { webhook, secret, signature } = created.json();
    expect(secret).toMatch(/^whsec_/);
    expect(signature).toMatch(/HMAC-SHA256/);
    const listed = await t.call('GET', '/webhooks', org.cle);
    expect(listed.body).not.toContain(secret);

    const test = await t.call('POST', `/webhooks/${webhook.id}/test`, org.cle, {});
    expect(test.json()).toMatchObject({ reussi: true, statut_http: 204, reactive: false, credits: { debites: 0 } });
    const delivery = received.at(-1)!;
    const header = delivery.headers['svc-signature'] as string;
    expect(() => stripe.webhooks.signature!.verifyHeader(delivery.body, header, secret, 300)).not.toThrow();
    expect(() => stripe.webhooks.signature!.verifyHeader(delivery.body + ' ', header, secret, 300)).toThrow();
    expect(JSON.parse(delivery.body)).toMatchObject({ genre: 'test' });

    const after = (await t.call('GET', '/webhooks', org.cle)).json();
    expect(after.webhooks[0].dernieres_livraisons[0]).toMatchObject({ genre: 'test', statut: 'livree', reponse: 204 });
  });

  it('refuses plain http and private targets with a clear 400; loopback only when allowed', async () => {
    const org = await strict.organisation({ acces: 'data' });
    for (const url of [
      'http://example.com/hook',
      'https://10.0.0.1/hook',
      'https://169.254.169.254/',
      `${receiverUrl}/ok`,
    ]) {
      const res = await strict.call('POST', '/webhooks', org.cle, { url, genres: ['nouvelle'] });
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.json()).toMatchObject({
        code: 'parametres_invalides',
        erreurs: [expect.objectContaining({ champ: 'url' })],
      });
    }
    const other = await t.organisation({ acces: 'data' });
    const res = await t.call('POST', '/webhooks', other.cle, {
      url: 'https://192.168.1.10/hook',
      genres: ['nouvelle'],
    });
    expect(res.statusCode).toBe(400);
  });

  it('is a Data operation: a pay-per-use organisation gets palier_insuffisant', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const res = await t.call('GET', '/webhooks', org.cle);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('palier_insuffisant');
  });
});

describe('taxe_amenagement over HTTP', () => {
  const body = { insee: '33234', surface_taxable_creee_m2: 120, residence_principale: true };

  it('debits 1 credit on live keys, not again for the identical answer', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const first = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, body);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ insee: '33234', statut: 'estimee', credits: { debites: 1, restants: 499 } });
    expect(first.json().total_max).toBeGreaterThan(first.json().total_min);
    const again = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, body);
    expect(again.json().credits).toEqual({ debites: 0, restants: 499 });
  });

  it('shares its response cache across organisations without telling one what another asked', async () => {
    const a = await t.organisation({ acces: 'usage' });
    const b = await t.organisation({ acces: 'usage' });
    const question = { ...body, surface_taxable_creee_m2: 87 };
    const first = await t.call('POST', '/fiscal/taxe-amenagement', a.cle, question);
    const second = await t.call('POST', '/fiscal/taxe-amenagement', b.cle, question);
    // B is billed as if nobody had asked before, and reads nothing of A's request: same body but its own credits.
    expect(second.json().credits).toEqual({ debites: 1, restants: 499 });
    const { credits: _a, ...answerA } = first.json();
    const { credits: _b, ...answerB } = second.json();
    expect(answerB).toEqual(answerA);
    for (const name of ['age', 'x-cache', 'last-modified']) expect(second.headers[name]).toBeUndefined();
  });

  it('serves the sandbox communes to pk_test_ keys without debit, and refuses the others', async () => {
    const org = await t.organisation({}, { mode: 'test' });
    const ok = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, body);
    expect(ok.json().credits).toEqual({ debites: 0, restants: null });
    const outside = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, { ...body, insee: '13055' });
    expect(outside.statusCode).toBe(403);
    expect(outside.json().code).toBe('hors_bac_a_sable');
  });

  it('answers commune_introuvable for a well-formed unknown code, without debit', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const res = await t.call('POST', '/fiscal/taxe-amenagement', org.cle, { ...body, insee: '99999' });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('commune_introuvable');
    const releve = await t.admin('GET', `/organisations/${org.id}/releve`);
    expect(releve.body.solde.restants).toBe(500);
  });
});

import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../db/client.ts';
import type { OperationContext } from '../../domain/catalogue.ts';
import { ApiError } from '../../domain/errors.ts';
import { claimDelivery, recordDeliveryOutcome } from '../../domain/webhooks/deliveries.ts';
import { webhooksCreer, webhooksLister, webhooksSupprimer, webhooksTester } from '../../domain/webhooks/operations.ts';
import { signDelivery, verifySignature } from '../../domain/webhooks/signature.ts';
import { createCursors } from '../../lib/cursor.ts';
import { createOutboundHttp } from '../../lib/outbound-http.ts';
import { createTestDb } from '../support/db.ts';

/** What a subscriber would write, independently of our code: Stripe-style verification of the raw body. */
function subscriberVerifies(secret: string, rawBody: Buffer, header: string, nowS: number): boolean {
  const parts = Object.fromEntries(
    header.split(',').map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]),
  );
  if (!parts.t || !parts.v1 || Math.abs(nowS - Number(parts.t)) > 300) return false;
  const expected = createHmac('sha256', secret)
    .update(Buffer.concat([Buffer.from(`${parts.t}.`), rawBody]))
    .digest();
  const given = Buffer.from(parts.v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

interface Received {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

let testDb: Awaited<ReturnType<typeof createTestDb>>;
let db: Db;
let receiverUrl: string;
let answer = 200;
const received: Received[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received.push({ headers: req.headers, body: Buffer.concat(chunks) });
    res.statusCode = answer;
    res.end('merci');
  });
});

async function newOrganisation(maxWebhooks = 10): Promise<string> {
  const { rows } = await db.query(
    `INSERT INTO organisations (nom, acces, portees, quota_minute, max_webhooks)
     VALUES ('Agence test', 'data', '{webhooks}', 600, $1) RETURNING id`,
    [maxWebhooks],
  );
  return rows[0].id;
}

function contextFor(organisationId: string): OperationContext {
  return {
    caller: { organisationId, cleId: randomUUID(), compteId: null, sandbox: false, portees: ['webhooks'] },
    requestId: 'req_test',
    signal: new AbortController().signal,
    services: {
      db,
      outbound: createOutboundHttp({ allowLoopback: true }),
      cursors: createCursors('secret-de-test'),
      now: () => new Date(),
    },
  };
}

/** Runs an operation as the pipeline would: flat input validated first, then the handler. */
async function call<I, O>(
  op: { input: { parse(v: unknown): I }; handler(i: I, ctx: OperationContext): Promise<O> },
  raw: unknown,
  ctx: OperationContext,
): Promise<O> {
  return op.handler(op.input.parse(raw), ctx);
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error('expected a refusal');
}

beforeAll(async () => {
  testDb = await createTestDb();
  db = testDb.db;
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});

afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
  await testDb.drop();
});

beforeEach(() => {
  answer = 200;
  received.length = 0;
});

describe('webhooks_creer', () => {
  it('creates a subscription whose secret is shown once', async () => {
    const ctx = contextFor(await newOrganisation(3));
    const created = await call(
      webhooksCreer,
      { url: receiverUrl, genres: ['baisse_prix', 'tache.terminee'], filtres: { insee: ['33063'], prix_max: 400000 } },
      ctx,
    );
    expect(created.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    expect(created.signature).toMatch(/Svc-Signature/);
    expect(created.webhook).toMatchObject({
      url: receiverUrl,
      genres: ['baisse_prix', 'tache.terminee'],
      filtres: { insee: ['33063'], prix_max: 400000 },
      actif: true,
      echecs_consecutifs: 0,
      coupe_le: null,
      motif_coupure: null,
      dernieres_livraisons: [],
    });
    const listed = await call(webhooksLister, {}, ctx);
    expect(listed.max).toBe(3);
    expect(listed.webhooks.map((w) => w.id)).toEqual([created.webhook.id]);
    expect(JSON.stringify(listed)).not.toContain(created.secret);
  });

  it.each([
    ['http://example.com/hooks', /https/],
    ['https://10.0.0.1/hooks', /publiques/],
    ['https://169.254.169.254/', /publiques/],
    ['ftp://example.com/', /https/],
  ])('refuses %s on the url field', async (url, message) => {
    const ctx = contextFor(await newOrganisation());
    const error = await refusal(call(webhooksCreer, { url, genres: ['nouvelle'] }, ctx));
    expect(error.code).toBe('parametres_invalides');
    expect(error.erreurs?.[0].champ).toBe('url');
    expect(error.message).toMatch(message);
  });

  it('validates genres and filters', () => {
    const ok = { url: receiverUrl, genres: ['nouvelle'] };
    const parse = (v: unknown) => webhooksCreer.input.safeParse(v).success;
    expect(parse(ok)).toBe(true);
    expect(parse({ ...ok, genres: [] })).toBe(false);
    expect(parse({ ...ok, genres: ['test'] })).toBe(false);
    expect(parse({ ...ok, genres: ['nouvelle', 'nouvelle'] })).toBe(false);
    expect(parse({ ...ok, url: `https://example.com/${'a'.repeat(500)}` })).toBe(false);
    expect(parse({ ...ok, filtres: { type_bien: ['apartment', 'house', 'immeuble'] } })).toBe(true);
    expect(parse({ ...ok, filtres: { type_bien: ['appartement'] } })).toBe(false);
    expect(parse({ ...ok, filtres: { ville: ['Bordeaux'] } })).toBe(false);
    expect(parse({ ...ok, filtres: { insee: Array.from({ length: 51 }, () => '33063') } })).toBe(false);
    expect(parse({ ...ok, filtres: { departement: ['33', '2A', '974'] } })).toBe(true);
    expect(parse({ ...ok, filtres: { prix_min: 300000, prix_max: 200000 } })).toBe(false);
    expect(parse({ ...ok, filtres: { prix_min: 200000, prix_max: 200000 } })).toBe(true);
  });

  it('refuses filters without a listing genre', async () => {
    const ctx = contextFor(await newOrganisation());
    const error = await refusal(
      call(webhooksCreer, { url: receiverUrl, genres: ['tache.terminee'], filtres: { cp: ['33000'] } }, ctx),
    );
    expect(error.erreurs?.[0].champ).toBe('filtres');
  });

  it('stops at the plan limit with 409 conflit; a deleted subscription frees its place', async () => {
    const ctx = contextFor(await newOrganisation(2));
    const first = await call(webhooksCreer, { url: receiverUrl, genres: ['nouvelle'] }, ctx);
    await call(webhooksCreer, { url: receiverUrl, genres: ['retrait'] }, ctx);
    const error = await refusal(call(webhooksCreer, { url: receiverUrl, genres: ['analyse'] }, ctx));
    expect(error.code).toBe('conflit');
    expect(error.status).toBe(409);
    await call(webhooksSupprimer, { id: first.webhook.id }, ctx);
    await call(webhooksCreer, { url: receiverUrl, genres: ['analyse'] }, ctx);
  });
});

describe('webhooks_tester', () => {
  it('sends one signed delivery that an independent verifier accepts, and records it', async () => {
    const ctx = contextFor(await newOrganisation());
    const { webhook, secret } = await call(webhooksCreer, { url: receiverUrl, genres: ['nouvelle'] }, ctx);
    const result = await call(webhooksTester, { id: webhook.id }, ctx);

    expect(result).toMatchObject({ reussi: true, statut_http: 200, erreur: null, reactive: false });
    expect(result.duree_ms).toBeGreaterThanOrEqual(0);
    expect(received).toHaveLength(1);
    const [delivery] = received;
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers['svc-genre']).toBe('test');
    expect(delivery.headers['svc-livraison']).toBe(result.id);
    const signature = delivery.headers['svc-signature'] as string;
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(subscriberVerifies(secret, delivery.body, signature, Date.now() / 1000)).toBe(true);
    expect(subscriberVerifies('whsec_autre', delivery.body, signature, Date.now() / 1000)).toBe(false);
    expect(verifySignature(secret, delivery.body, signature)).toBe(true);

    const body = JSON.parse(delivery.body.toString('utf8'));
    expect(Object.keys(body)).toEqual(['id', 'genre', 'le', 'donnees']);
    expect(body).toMatchObject({ id: result.id, genre: 'test', donnees: { webhook_id: webhook.id } });
    expect(typeof body.donnees.message).toBe('string');
    expect(new Date(body.le).toISOString()).toBe(body.le);

    const [listed] = (await call(webhooksLister, {}, ctx)).webhooks;
    expect(listed.dernieres_livraisons).toEqual([
      { id: result.id, le: body.le, genre: 'test', statut: 'livree', tentatives: 1, reponse: 200 },
    ]);
  });

  it('reports a receiver answering 500 without touching the failure count', async () => {
    const ctx = contextFor(await newOrganisation());
    const { webhook } = await call(webhooksCreer, { url: receiverUrl, genres: ['nouvelle'] }, ctx);
    await db.query('UPDATE webhooks SET echecs_consecutifs = 7 WHERE id = $1', [webhook.id]);
    answer = 500;
    const result = await call(webhooksTester, { id: webhook.id }, ctx);
    expect(result).toMatchObject({ reussi: false, statut_http: 500, reactive: false });
    expect(result.erreur).toMatch(/500/);
    const [listed] = (await call(webhooksLister, {}, ctx)).webhooks;
    expect(listed.echecs_consecutifs).toBe(7);
    expect(listed.dernieres_livraisons[0]).toMatchObject({ statut: 'echec', tentatives: 1, reponse: 500 });
  });

  it('reports an unreachable receiver with no HTTP status', async () => {
    const ctx = contextFor(await newOrganisation());
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise((resolve) => closed.close(resolve));
    const { webhook } = await call(webhooksCreer, { url, genres: ['nouvelle'] }, ctx);
    const result = await call(webhooksTester, { id: webhook.id }, ctx);
    expect(result).toMatchObject({ reussi: false, statut_http: null, reactive: false });
    expect(result.erreur).toMatch(/Connexion/);
  });

  it('reactivates a cut subscription when the test succeeds, and only then', async () => {
    const ctx = contextFor(await newOrganisation());
    const { webhook } = await call(webhooksCreer, { url: receiverUrl, genres: ['nouvelle'] }, ctx);
    await db.query(
      `UPDATE webhooks SET actif = false, echecs_consecutifs = 50, coupe_le = now(), motif_coupure = 'coupé' WHERE id = $1`,
      [webhook.id],
    );
    answer = 503;
    expect((await call(webhooksTester, { id: webhook.id }, ctx)).reactive).toBe(false);
    expect((await call(webhooksLister, {}, ctx)).webhooks[0].actif).toBe(false);

    answer = 204;
    const result = await call(webhooksTester, { id: webhook.id }, ctx);
    expect(result).toMatchObject({ reussi: true, statut_http: 204, reactive: true });
    const [listed] = (await call(webhooksLister, {}, ctx)).webhooks;
    expect(listed).toMatchObject({ actif: true, echecs_consecutifs: 0, coupe_le: null, motif_coupure: null });
    expect(listed.dernieres_livraisons.map((d) => d.statut)).toEqual(['livree', 'echec']);

    expect((await call(webhooksTester, { id: webhook.id }, ctx)).reactive).toBe(false);
  });
  it('lists deliveries of the same instant newest first', async () => {
    const frozen = new Date('2025-03-01T10:00:00.000Z');
    const ctx = { ...contextFor(await newOrganisation()) };
    ctx.services = { ...ctx.services, now: () => frozen };
    const { webhook } = await call(webhooksCreer, { url: receiverUrl, genres: ['nouvelle'] }, ctx);
    const first = await call(webhooksTester, { id: webhook.id }, ctx);
    const second = await call(webhooksTester, { id: webhook.id }, ctx);
    const [listed] = (await call(webhooksLister, {}, ctx)).webhooks;
    expect(listed.dernieres_livraisons.map((d) => d.id)).toEqual([second.id, first.id]);
  });
});

describe('ownership and deletion', () => {
  it('hides another organisation’s subscription', async () => {
    const owner = contextFor(await newOrganisation());
    const other = contextFor(await newOrganisation());
    const { webhook } = await call(webhooksCreer, { url: receiverUrl, genres: ['nouvelle'] }, owner);
    expect((await call(webhooksLister, {}, other)).webhooks).toEqual([]);
    expect((await refusal(call(webhooksTester, { id: webhook.id }, other))).code).toBe('ressource_absente');
    expect((await refusal(call(webhooksSupprimer, { id: webhook.id }, other))).code).toBe('ressource_absente');
    expect(received).toHaveLength(0);
    expect((await call(webhooksLister, {}, owner)).webhooks).toHaveLength(1);
  });

  it('deletes the subscription and cancels its pending deliveries', async () => {
    const ctx = contextFor(await newOrganisation());
    const { webhook } = await call(webhooksCreer, { url: receiverUrl, genres: ['nouvelle'] }, ctx);
    const { rows } = await db.query(
      `INSERT INTO livraisons (webhook_id, genre, statut, payload) VALUES ($1, 'nouvelle', 'a_livrer', '{}'),
              ($1, 'nouvelle', 'echec', '{}'), ($1, 'nouvelle', 'livree', '{}') RETURNING id, statut`,
      [webhook.id],
    );
    // The body is an empty JSON object: the flat input is then just the path id.
    expect(await call(webhooksSupprimer, { id: webhook.id }, ctx)).toEqual({ id: webhook.id, supprime: true });

    expect((await call(webhooksLister, {}, ctx)).webhooks).toEqual([]);
    const after = await db.query('SELECT id, statut FROM livraisons WHERE webhook_id = $1', [webhook.id]);
    const statusOf = (id: string) => after.rows.find((r) => r.id === id)?.statut;
    expect(rows.map((r) => statusOf(r.id))).toEqual(['annulee', 'annulee', 'livree']);
    expect(await claimDelivery(db, rows[0].id, new Date())).toBeNull();
    const secret = await db.query('SELECT secret FROM webhooks WHERE id = $1', [webhook.id]);
    expect(secret.rows[0].secret).toBeNull();

    expect((await refusal(call(webhooksSupprimer, { id: webhook.id }, ctx))).code).toBe('ressource_absente');
    expect((await refusal(call(webhooksTester, { id: webhook.id }, ctx))).code).toBe('ressource_absente');
  });

  it('refuses an id that is not a uuid', () => {
    expect(webhooksSupprimer.input.safeParse({ id: 'abc' }).success).toBe(false);
  });
});

describe('recordDeliveryOutcome', () => {
  async function subscription() {
    const ctx = contextFor(await newOrganisation());
    const { webhook } = await call(webhooksCreer, { url: receiverUrl, genres: ['nouvelle'] }, ctx);
    return { ctx, id: webhook.id };
  }
  async function pendingDelivery(webhookId: string): Promise<string> {
    const { rows } = await db.query(
      `INSERT INTO livraisons (webhook_id, genre, payload) VALUES ($1, 'nouvelle', '{"annonce_id":"a1"}') RETURNING id`,
      [webhookId],
    );
    return rows[0].id;
  }
  const fail = (livraisonId: string, tentative = 1) =>
    recordDeliveryOutcome(db, { livraisonId, tentative, reussi: false, reponse: 500, derniere: false, le: new Date() });

  it('cuts the subscription at the 50th consecutive failure', async () => {
    const { ctx, id } = await subscription();
    for (let i = 1; i <= 49; i++) {
      const outcome = await fail(await pendingDelivery(id));
      expect(outcome.coupe).toBe(false);
    }
    let [listed] = (await call(webhooksLister, {}, ctx)).webhooks;
    expect(listed).toMatchObject({ actif: true, echecs_consecutifs: 49 });

    const fiftieth = await fail(await pendingDelivery(id));
    expect(fiftieth).toMatchObject({ enregistre: true, statut: 'echec', echecsConsecutifs: 50, coupe: true });
    [listed] = (await call(webhooksLister, {}, ctx)).webhooks;
    expect(listed.actif).toBe(false);
    expect(listed.coupe_le).not.toBeNull();
    expect(listed.motif_coupure).toMatch(/50 échecs/);
    expect(listed.dernieres_livraisons).toHaveLength(20);

    // Nothing more is sent to a cut subscription: a pending delivery is exhausted instead of claimed.
    const pending = await pendingDelivery(id);
    expect(await claimDelivery(db, pending, new Date())).toBeNull();
    const { rows } = await db.query('SELECT statut FROM livraisons WHERE id = $1', [pending]);
    expect(rows[0].statut).toBe('epuisee');
  });

  it('resets the count on success and ignores an attempt recorded twice', async () => {
    const { ctx, id } = await subscription();
    const livraison = await pendingDelivery(id);
    const claimed = await claimDelivery(db, livraison, new Date());
    expect(claimed).toMatchObject({ id: livraison, genre: 'nouvelle', donnees: { annonce_id: 'a1' }, tentatives: 0 });
    expect(claimed?.secret).toMatch(/^whsec_/);

    expect((await fail(livraison, 1)).echecsConsecutifs).toBe(1);
    expect((await fail(livraison, 1)).enregistre).toBe(false);
    expect((await fail(livraison, 2)).echecsConsecutifs).toBe(2);
    const success = await recordDeliveryOutcome(db, {
      livraisonId: livraison,
      tentative: 3,
      reussi: true,
      reponse: 200,
      derniere: false,
      le: new Date(),
    });
    expect(success).toMatchObject({ statut: 'livree', echecsConsecutifs: 0, coupe: false });
    const [listed] = (await call(webhooksLister, {}, ctx)).webhooks;
    expect(listed.dernieres_livraisons[0]).toMatchObject({ statut: 'livree', tentatives: 3, reponse: 200 });
  });

  it('exhausts a delivery on its last failed attempt', async () => {
    const { id } = await subscription();
    const livraison = await pendingDelivery(id);
    const outcome = await recordDeliveryOutcome(db, {
      livraisonId: livraison,
      tentative: 6,
      reussi: false,
      reponse: null,
      erreur: 'Connexion impossible',
      derniere: true,
      le: new Date(),
    });
    expect(outcome.statut).toBe('epuisee');
  });
});

describe('signature', () => {
  it('signs t=<seconds>,v1=<hmac of "t.body"> and verifies within the tolerance only', () => {
    const header = signDelivery('whsec_x', '{"a":1}', 1_700_000_000.9);
    const expected = createHmac('sha256', 'whsec_x').update('1700000000.{"a":1}').digest('hex');
    expect(header).toBe(`t=1700000000,v1=${expected}`);
    const at = (s: number) => new Date(s * 1000);
    expect(verifySignature('whsec_x', '{"a":1}', header, 300, at(1_700_000_299))).toBe(true);
    expect(verifySignature('whsec_x', '{"a":1}', header, 300, at(1_700_000_301))).toBe(false);
    expect(verifySignature('whsec_x', '{"a":2}', header, 300, at(1_700_000_000))).toBe(false);
    expect(verifySignature('whsec_y', '{"a":1}', header, 300, at(1_700_000_000))).toBe(false);
    expect(verifySignature('whsec_x', '{"a":1}', `v1=00,${header}`, 300, at(1_700_000_000))).toBe(true);
    expect(verifySignature('whsec_x', '{"a":1}', 'n’importe quoi', 300, at(1_700_000_000))).toBe(false);
  });
});

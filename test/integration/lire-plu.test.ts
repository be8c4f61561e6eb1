import { execFileSync, spawn } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { contractOf } from '../support/contrat.ts';
import { forgetServedSource, PARAMETRE_DEMONSTRATION, SOURCE_DEMONSTRATION } from '../../domain/qualite.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import {
  hasPluData,
  importAddress,
  importZones,
  PLU_PDF,
  POINTS,
  readingModel,
  servePdfs,
} from '../support/plu-fixtures.ts';
import { createRuntime } from '../support/runtime.ts';

// The real Latresne rules PDF lives beside the project (../shared/data); without it this suite has nothing to read.
const suite = hasPluData ? describe : describe.skip;
const NEEDS_DATA = hasPluData ? '' : ' (skipped: ../shared/data/plu_pdf absent)';

let t: TestApp;
let runtime: Awaited<ReturnType<typeof createRuntime>>;
let model: ModelServer;
let pdfs: Awaited<ReturnType<typeof servePdfs>>;
/** Every envelope served here, rules included, is checked against the published description. */
let contrat: Awaited<ReturnType<typeof contractOf>>;

beforeAll(async () => {
  if (!hasPluData) return;
  runtime = await createRuntime();
  t = await createTestApp({ services: { tasks: runtime.engine } });
  model = await startModelServer(readingModel);
  pdfs = await servePdfs();
  await importZones(t.db, pdfs.url);
  await runtime.startWorker(t.db, model.url);
  contrat = await contractOf(t.app);
}, 120_000);
afterAll(async () => {
  await runtime?.close();
  await t?.close();
  await model?.close();
  pdfs?.close();
});

const post = (cle: string, body: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/urbanisme/reglements',
    headers: { authorization: `Bearer ${cle}`, 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
const get = (cle: string, url: string) =>
  t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${cle}` } });

/** The text of one page of the PDF by poppler's pdftotext, independent of our own extraction. */
function pdftotextPage(page: number): string {
  const text = execFileSync('pdftotext', ['-f', String(page), '-l', String(page), PLU_PDF, '-'], { encoding: 'utf8' });
  return text.replace(/\s+/g, ' ').replace(/[’']/g, "'");
}

suite(`lire_plu on Temporal, with the real Latresne rules PDF${NEEDS_DATA}`, () => {
  it('answers 202 with Location, then reads the zone with every quotation on its stated page', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const started = await post(org.cle, { ...POINTS.ua });
    expect(started.statusCode, started.body).toBe(202);
    contrat.expectDescribed('lire_plu', started);
    const envelope = started.json();
    expect(started.headers.location).toBe(`/api/v1/urbanisme/reglements/${envelope.tache.id}`);
    expect(envelope.tache).toMatchObject({ operation: 'lire_plu', resultat_url: started.headers.location });
    expect(['en_attente', 'en_cours']).toContain(envelope.tache.statut);
    expect(envelope.credits).toEqual({ debites: 60, restants: 440 });

    const done = await get(org.cle, `${started.headers.location}?attendre=60`);
    contrat.expectDescribed('resultat_lire_plu', done);
    const body = done.json();
    expect(body.tache.statut, JSON.stringify(body.erreur)).toBe('terminee');
    const resultat = body.resultat;
    expect(resultat).toMatchObject({ statut: 'lu', zone: { code: 'UA', approuve_le: '2017-01-23' } });
    expect(resultat.regles.length).toBeGreaterThan(0);
    for (const regle of resultat.regles) {
      const words = regle.citation.replace(/\s+/g, ' ').replace(/[’']/g, "'").slice(0, 60);
      expect(pdftotextPage(regle.page), `page ${regle.page}: ${regle.citation}`).toContain(words);
    }
    expect(JSON.stringify(resultat.regles)).not.toContain('45 mètres');
    expect(resultat.citations_ecartees).toBeGreaterThan(0);
    expect(resultat.lecture).toMatchObject({ modele: 'modele-test', pages_pdf: 83, depuis_cache: false });
    expect(body.credits).toEqual({ debites: 60, restants: 440 });
  });

  it('reads the same zone again from the cache without calling the model, and does not debit the same rules twice', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const first = (await post(org.cle, { ...POINTS.ua, attendre: 60 })).json();
    expect(first.tache.statut).toBe('terminee');
    const calls = model.requests.length;
    const second = await post(org.cle, { ...POINTS.ua, attendre: 60 });
    // Starting a task is 202 even when it ended within `attendre`: the envelope says so and carries the result.
    expect(second.statusCode).toBe(202);
    expect(second.headers.location).toBe(second.json().tache.resultat_url);
    expect(second.json().tache.statut).toBe('terminee');
    expect(second.json().resultat.lecture.depuis_cache).toBe(true);
    expect(model.requests.length).toBe(calls);
    expect(second.json().credits).toEqual({ debites: 0, restants: 440 });
  });

  it('shares its readings across organisations, telling one nothing of another', async () => {
    const a = await t.organisation({ acces: 'usage', nom: 'Organisation A' });
    const b = await t.organisation({ acces: 'usage', nom: 'Organisation B' });
    const fromA = (await post(a.cle, { ...POINTS.ua, attendre: 60 })).json();
    const fromB = (await post(b.cle, { ...POINTS.ua, attendre: 60 })).json();
    // B gets the rules read once for everybody (no model call, the same extraction date: when the rules were read is a
    // fact of the data), billed as its own first reading, in a task of its own that names nothing of A.
    expect(fromB.resultat.lecture.depuis_cache).toBe(true);
    expect(fromB.resultat.regles).toEqual(fromA.resultat.regles);
    expect(fromA.credits.debites).toBeGreaterThan(0);
    expect(fromB.credits.debites).toBe(fromA.credits.debites);
    expect(fromB.tache.id).not.toBe(fromA.tache.id);
    const served = JSON.stringify(fromB);
    for (const trace of [a.id, a.cle, fromA.tache.id, 'Organisation A']) expect(served).not.toContain(trace);
  });

  it('asserts nothing and debits nothing for a scanned PDF, a zone without rules document or a point without zone', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const scannedRes = await post(org.cle, { ...POINTS.scanne, attendre: 60 });
    contrat.expectDescribed('lire_plu', scannedRes);
    const scanned = scannedRes.json();
    expect(scanned.resultat).toMatchObject({ statut: 'scanne', regles: [], lecture: { pages_pdf: 3 } });
    expect(scanned.resultat.reglement_url).toMatch(/scanne\.pdf$/);
    expect(scanned.credits).toEqual({ debites: 0, restants: 500 });
    // No rules document published for the zone: said as such, not as a scanned PDF.
    const unpublishedRes = await post(org.cle, { ...POINTS.non_publie, attendre: 60 });
    contrat.expectDescribed('lire_plu', unpublishedRes);
    const unpublished = unpublishedRes.json();
    expect(unpublished.resultat).toMatchObject({
      statut: 'non_publie',
      zone: { code: 'N' },
      reglement_url: null,
      lecture: null,
      regles: [],
    });
    expect(unpublished.resultat.message).toMatch(/Aucun règlement écrit n’est publié/);
    expect(unpublished.credits.debites).toBe(0);
    const none = (await post(org.cle, { ...POINTS.hors_zone, attendre: 60 })).json();
    expect(none.resultat).toMatchObject({ statut: 'zone_absente', regles: [] });
    expect(none.credits.debites).toBe(0);
    const releve = await t.admin('GET', `/organisations/${org.id}/releve`);
    expect(releve.body.solde.restants).toBe(500);
  });

  it('says the zoning is the demonstration while the live data is the generated territory', async () => {
    await t.db.query('INSERT INTO parametres (nom, valeur) VALUES ($1, $2)', [
      PARAMETRE_DEMONSTRATION,
      SOURCE_DEMONSTRATION,
    ]);
    forgetServedSource(t.db);
    try {
      const org = await t.organisation({ acces: 'usage' });
      const none = (await post(org.cle, { ...POINTS.hors_zone, attendre: 60 })).json();
      expect(none.resultat.qualite.source).toBe(SOURCE_DEMONSTRATION);
    } finally {
      await t.db.query('DELETE FROM parametres WHERE nom = $1', [PARAMETRE_DEMONSTRATION]);
      forgetServedSource(t.db);
    }
  });

  it('returns the same task for the same Idempotency-Key and body, 409 for another body', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const key = { 'idempotency-key': 'commande-42' };
    const a = (await post(org.cle, { ...POINTS.ua }, key)).json();
    const b = (await post(org.cle, { ...POINTS.ua, attendre: 1 }, key)).json();
    expect(b.tache.id).toBe(a.tache.id);
    const c = await post(org.cle, { ...POINTS.scanne }, key);
    expect(c.statusCode).toBe(409);
    expect(c.json().code).toBe('conflit');
    const releve = await t.admin('GET', `/organisations/${org.id}/releve`);
    expect(releve.body.mouvements.filter((m: { genre: string }) => m.genre === 'reservation')).toHaveLength(1);
  });

  it('reads the point of a BAN address given by key or by text, and answers adresse_introuvable otherwise', async () => {
    const cle = await importAddress(t.db);
    const org = await t.organisation({ acces: 'usage' });
    const byKey = (await post(org.cle, { cle_ban: cle, attendre: 60, themes: ['hauteur'] })).json();
    expect(byKey.resultat).toMatchObject({
      statut: 'lu',
      adresse: { precision: 'numero', insee: '33234', libelle: expect.stringContaining('Libération') },
      zone: { code: 'UA' },
    });
    const byText = (await post(org.cle, { q: '12 avenue de la liberation latresne', attendre: 60 })).json();
    expect(byText.resultat.zone.code).toBe('UA');
    const unknown = await post(org.cle, { cle_ban: '33234_9999_00001' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('adresse_introuvable');
  });

  it('hides a task from another organisation', async () => {
    const a = await t.organisation({ acces: 'usage' });
    const b = await t.organisation({ acces: 'usage' });
    const task = (await post(a.cle, { ...POINTS.hors_zone })).json();
    const res = await get(b.cle, task.tache.resultat_url);
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('ressource_absente');
  });
});

suite(`task failures and webhook deliveries${NEEDS_DATA}`, () => {
  it('fails the task and gives the 60 credits back when the model always fails', async () => {
    const failing = await startModelServer(() => ({ status: 500 }));
    const failingRuntime = await createRuntime();
    const app = await createTestApp({ services: { tasks: failingRuntime.engine } });
    try {
      const served = await servePdfs();
      await importZones(app.db, served.url);
      await failingRuntime.startWorker(app.db, failing.url);
      const org = await app.organisation({ acces: 'usage' });
      const res = await app.app.inject({
        method: 'POST',
        url: '/api/v1/urbanisme/reglements',
        headers: { authorization: `Bearer ${org.cle}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ ...POINTS.ua, attendre: 60 }),
      });
      contrat.expectDescribed('lire_plu', res);
      const body = res.json();
      expect(body.tache.statut).toBe('echouee');
      expect(body.erreur).toMatchObject({ code: 'modele_indisponible' });
      expect(body.credits).toEqual({ debites: 0, restants: 500 });
      expect(failing.requests.length).toBeGreaterThan(1);
      served.close();
    } finally {
      await failingRuntime.close();
      await app.close();
      await failing.close();
    }
  }, 90_000);

  it('delivers tache.terminee signed, and retries then cuts a subscriber that answers 500', async () => {
    const stripe = new Stripe('sk_test_unused');
    const received: Array<{ url: string; headers: IncomingMessage['headers']; body: string }> = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ url: req.url!, headers: req.headers, body });
        res.writeHead(req.url === '/panne' ? 500 : 200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
    try {
      const org = await t.organisation({ acces: 'data' });
      const call = (url: string, payload: unknown) =>
        t.app.inject({
          method: 'POST',
          url: `/api/v1${url}`,
          headers: { authorization: `Bearer ${org.cle}`, 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        });
      const ok = (await call('/webhooks', { url: `${base}/ok`, genres: ['tache.terminee'] })).json();
      const down = (await call('/webhooks', { url: `${base}/panne`, genres: ['tache.terminee'] })).json();
      // 48 failures already: two more attempts of this delivery reach the 50 that cut the subscription.
      await t.db.query('UPDATE webhooks SET echecs_consecutifs = 48 WHERE id = $1', [down.webhook.id]);

      const task = (await call('/urbanisme/reglements', { ...POINTS.hors_zone, attendre: 30 })).json();
      expect(task.tache.statut).toBe('terminee');
      await expect.poll(() => received.filter((r) => r.url === '/ok').length, { timeout: 20_000 }).toBe(1);
      const delivery = received.find((r) => r.url === '/ok')!;
      expect(() =>
        stripe.webhooks.signature!.verifyHeader(
          delivery.body,
          delivery.headers['svc-signature'] as string,
          ok.secret,
          300,
        ),
      ).not.toThrow();
      expect(JSON.parse(delivery.body)).toMatchObject({
        genre: 'tache.terminee',
        donnees: { tache: { id: task.tache.id } },
      });

      await expect
        .poll(
          async () => (await t.db.query('SELECT actif FROM webhooks WHERE id = $1', [down.webhook.id])).rows[0].actif,
          {
            timeout: 20_000,
          },
        )
        .toBe(false);
      const attempts = received.filter((r) => r.url === '/panne');
      expect(attempts).toHaveLength(2);
      // A fresh timestamp and signature per attempt.
      expect(attempts[0].headers['svc-signature']).not.toBe(attempts[1].headers['svc-signature']);
      const listed = (
        await t.app.inject({ method: 'GET', url: '/api/v1/webhooks', headers: { authorization: `Bearer ${org.cle}` } })
      ).json();
      const cut = listed.webhooks.find((w: { id: string }) => w.id === down.webhook.id);
      expect(cut).toMatchObject({ actif: false, echecs_consecutifs: 50 });
      expect(cut.coupe_le).toBeTruthy();
      expect(cut.motif_coupure).toMatch(/50/);
    } finally {
      receiver.close();
    }
  }, 60_000);
});

suite(`a worker killed in the middle of a reading${NEEDS_DATA}`, () => {
  it('lets the task end terminee after a restart, with one debit of 60', async () => {
    const slow = await startModelServer();
    let calls = 0;
    // The first reading hangs (the worker is killed meanwhile); the retry on the new worker is answered.
    slow.setHandler((body) => (++calls === 1 ? { delayMs: 60_000, then: readingModel(body) } : readingModel(body)));
    const rt = await createRuntime();
    const app = await createTestApp({ services: { tasks: rt.engine } });
    const served = await servePdfs();
    const env = {
      ...process.env,
      DATABASE_URL: app.databaseUrl,
      TEMPORAL_ADDRESS: rt.address,
      TEMPORAL_TASK_QUEUE: rt.taskQueue,
      OPENAI_BASE_URL: slow.url,
      OPENAI_MODEL: 'modele-test',
      OUTBOUND_ALLOW_LOOPBACK: 'true',
    };
    const spawnWorker = () => spawn(process.execPath, ['worker/main.ts'], { env, stdio: 'ignore' });
    try {
      await importZones(app.db, served.url);
      const org = await app.organisation({ acces: 'usage' });
      let worker = spawnWorker();
      const started = await app.app.inject({
        method: 'POST',
        url: '/api/v1/urbanisme/reglements',
        headers: { authorization: `Bearer ${org.cle}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ ...POINTS.ua }),
      });
      const id = started.json().tache.id;
      await expect.poll(() => calls, { timeout: 30_000 }).toBeGreaterThan(0);
      worker.kill('SIGKILL');
      worker = spawnWorker();
      const done = await app.app.inject({
        method: 'GET',
        url: `/api/v1/urbanisme/reglements/${id}?attendre=60`,
        headers: { authorization: `Bearer ${org.cle}` },
      });
      expect(done.json().tache.statut).toBe('terminee');
      expect(done.json().credits.debites).toBe(60);
      const { rows } = await app.db.query(
        `SELECT genre, credits FROM mouvements WHERE organisation_id = $1 AND tache = $2 ORDER BY id`,
        [org.id, id],
      );
      expect(rows).toEqual([
        { genre: 'reservation', credits: -60 },
        { genre: 'reglement', credits: 0 },
      ]);
      worker.kill('SIGTERM');
    } finally {
      served.close();
      await rt.close();
      await app.close();
      await slow.close();
    }
  }, 120_000);
});

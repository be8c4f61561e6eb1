import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAnnonces } from '../../domain/annonces/import.ts';
import { balanceOf, debit } from '../../domain/platform/ledger.ts';
import { verifySignature } from '../../domain/webhooks/signature.ts';
import { reveillerAbonnement } from '../../lib/temporal.ts';
import { startDiffuseur } from '../../worker/diffuseur.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { createRuntime } from '../support/runtime.ts';
import { annonceDuPortail, appartement, fichierReleves } from '../unit/annonces/support.ts';

// The fan-out of listing events to webhook subscriptions and to watches and alerts, on the real Temporal dev server
// and a real HTTP subscriber: filters, signatures, one credit per event received, nothing of before a subscription,
// a subscriber down then up, a delivery that fails for good costing nothing.

const DELAIS_S = [0.3, 0.3, 0.3, 0.3, 0.3];
const MAINTENANT = new Date('2025-11-01T00:00:00Z');

interface Recu {
  chemin: string;
  corps: string;
  json: any;
  signature: string;
  livraison: string;
}

let t: TestApp;
let runtime: Awaited<ReturnType<typeof createRuntime>>;
let diffuseur: ReturnType<typeof startDiffuseur>;
let abonne: Server;
let base: string;
let dir: string;
const recus: Recu[] = [];
/** Answers per path: a status code, or a function of the attempt's number on that path. */
const reponses = new Map<string, (n: number) => number>();
const tentatives = new Map<string, number>();
let fichiers = 0;

const importer = async (releves: object[]) =>
  importAnnonces(t.db, await fichierReleves(dir, `r${++fichiers}.jsonl`, releves), {
    dataset: 'live',
    maintenant: MAINTENANT,
  });

async function lireCorps(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const p of req) parts.push(p as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

beforeAll(async () => {
  runtime = await createRuntime({ delaisLivraisonS: DELAIS_S });
  t = await createTestApp({ services: { tasks: runtime.engine } });
  await runtime.startWorker(t.db, null);
  diffuseur = startDiffuseur({
    db: t.db,
    client: runtime.client,
    taskQueue: runtime.taskQueue,
    delaisS: DELAIS_S,
    periodeMs: 100,
  });
  dir = await mkdtemp(path.join(tmpdir(), 'diffusion-'));
  abonne = createServer(async (req, res) => {
    const corps = await lireCorps(req);
    const chemin = req.url ?? '/';
    const n = (tentatives.get(chemin) ?? 0) + 1;
    tentatives.set(chemin, n);
    const statut = (reponses.get(chemin) ?? (() => 204))(n);
    if (statut < 300) {
      recus.push({
        chemin,
        corps,
        json: JSON.parse(corps),
        signature: String(req.headers['svc-signature']),
        livraison: String(req.headers['svc-livraison']),
      });
    }
    res.writeHead(statut).end();
  });
  await new Promise<void>((resolve) => abonne.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(abonne.address() as { port: number }).port}`;
  // Listings already there before any subscription: nothing of them may be delivered.
  await importer([
    appartement(),
    appartement({ portail: 'portal_a', id: '2001', insee: '59350', code_postal: '59000', surface: 30, prix: 200_000 }),
  ]);
}, 90_000);

afterAll(async () => {
  await diffuseur?.stop();
  await runtime?.close();
  await t?.close();
  abonne?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const recusSur = (chemin: string) => recus.filter((r) => r.chemin === chemin);

async function attendre<T>(lire: () => Promise<T> | T, pret: (v: T) => boolean, ms = 30_000): Promise<T> {
  const fin = Date.now() + ms;
  for (;;) {
    const v = await lire();
    if (pret(v) || Date.now() > fin) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Once the fan-out has nothing left and no delivery is due within a minute (a result waits its 15). */
async function auRepos() {
  await attendre(
    async () =>
      (
        await t.db.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM livraisons
                   WHERE en_file AND statut IN ('a_livrer', 'en_cours', 'echec') AND prochaine_le <= now() + interval '1 minute')
                + (SELECT count(*) FROM annonces_evenements e, diffusion_curseurs c
                    WHERE c.journal = 'annonces' AND e.dataset = 'live' AND e.id > c.dernier_id) AS n`,
        )
      ).rows[0].n,
    (n) => Number(n) === 0,
  );
}

async function abonner(cle: string, chemin: string, corps: object) {
  const res = await t.call('POST', '/webhooks', cle, { url: `${base}${chemin}`, ...corps });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { webhook: { id: string }; secret: string };
}

const debitsDe = async (organisationId: string) =>
  (
    await t.db.query<{ credits: number; requete: string }>(
      `SELECT credits, requete FROM mouvements WHERE organisation_id = $1 AND operation = 'livraison_webhook' ORDER BY id`,
      [organisationId],
    )
  ).rows;

describe('listing events to webhook subscriptions', () => {
  it('delivers the drops of one commune, signed, each debited 1 credit, nothing of before the subscription', async () => {
    const org = await t.organisation({ acces: 'data' });
    const { secret } = await abonner(org.cle, '/baisses-paris', {
      genres: ['baisse_prix'],
      filtres: { insee: ['75111'] },
    });
    // A drop in Paris 11e and one in Lille; the Paris flat's drop again the same day at the same price is no event.
    await importer([
      appartement({ vu_le: '2025-03-10T08:00:00Z', prix: 380_000 }),
      appartement({ vu_le: '2025-03-10T18:00:00Z', prix: 380_000 }),
      appartement({
        portail: 'portal_a',
        id: '2001',
        insee: '59350',
        code_postal: '59000',
        surface: 30,
        prix: 190_000,
        vu_le: '2025-03-10T08:00:00Z',
      }),
    ]);
    await auRepos();
    const recu = recusSur('/baisses-paris');
    expect(recu).toHaveLength(1);
    const [d] = recu;
    expect(verifySignature(secret, d.corps, d.signature)).toBe(true);
    expect(verifySignature(secret, `${d.corps} `, d.signature)).toBe(false);
    expect(d.livraison).toBe(d.json.id);
    expect(d.json).toMatchObject({
      genre: 'baisse_prix',
      donnees: {
        genre: 'baisse_prix',
        avant: { prix: 400_000 },
        apres: { prix: 380_000 },
        annonce: { insee: '75111', prix: 380_000, id_portail: null, lien: null },
      },
    });
    const debits = await debitsDe(org.id);
    expect(debits).toEqual([{ credits: -1, requete: d.json.id }]);
    const liste = (await t.call('GET', '/webhooks', org.cle)).json();
    expect(liste.webhooks[0].dernieres_livraisons).toMatchObject([
      { genre: 'baisse_prix', statut: 'livree', tentatives: 1 },
    ]);
  });

  it('combines the filters with AND', async () => {
    const org = await t.organisation({ acces: 'data' });
    await abonner(org.cle, '/et', {
      genres: ['nouvelle'],
      filtres: { departement: ['75'], type_bien: ['apartment'], prix_max: 300_000 },
    });
    await importer([
      appartement({ id: '3001', prix: 250_000, vu_le: '2025-04-01T08:00:00Z' }), // passes every filter
      appartement({ id: '3002', prix: 500_000, surface: 80, vu_le: '2025-04-01T08:00:00Z' }), // too dear
      appartement({ id: '3003', prix: 250_000, insee: '59350', code_postal: '59000', vu_le: '2025-04-01T08:00:00Z' }), // not in 75
      {
        ...appartement({ id: '3004', prix: 250_000, vu_le: '2025-04-01T08:00:00Z' }),
        type: 'maison',
        surface: 90,
        terrain: 300,
      }, // a house
    ]);
    await auRepos();
    const recu = recusSur('/et');
    const attendue = (await annonceDuPortail(t.db, 'portal_a:3001')).id;
    expect(recu.map((r) => r.json.donnees.annonce_id)).toEqual([attendue]);
  });

  it('keeps a subscriber that is down, and delivers in order once it is up, billing each event once', async () => {
    const org = await t.organisation({ acces: 'data' });
    // Down for its first three attempts, then up.
    reponses.set('/intermittent', (n) => (n <= 3 ? 503 : 200));
    await abonner(org.cle, '/intermittent', { genres: ['nouvelle'], filtres: { insee: ['33063'] } });
    await importer(
      ['4001', '4002', '4003'].map((id, i) =>
        appartement({
          id,
          insee: '33063',
          code_postal: '33000',
          prix: 200_000 + i * 1000,
          vu_le: '2025-05-01T08:00:00Z',
        }),
      ),
    );
    await auRepos();
    const recu = recusSur('/intermittent');
    const ids = await Promise.all(
      ['4001', '4002', '4003'].map(async (id) => (await annonceDuPortail(t.db, `portal_a:${id}`)).id),
    );
    expect(recu.map((r) => r.json.donnees.annonce_id)).toEqual(ids);
    expect(tentatives.get('/intermittent')).toBe(6);
    expect((await debitsDe(org.id)).map((d) => d.requete).sort()).toEqual(recu.map((r) => r.json.id).sort());
    const w = (await t.call('GET', '/webhooks', org.cle)).json().webhooks[0];
    expect(w).toMatchObject({ actif: true, echecs_consecutifs: 0 });
  });

  it('debits nothing for a delivery that fails for good', async () => {
    const org = await t.organisation({ acces: 'data' });
    reponses.set('/jamais', () => 500);
    await abonner(org.cle, '/jamais', { genres: ['nouvelle'], filtres: { insee: ['69123'] } });
    await importer([appartement({ id: '5001', insee: '69123', code_postal: '69001', vu_le: '2025-06-01T08:00:00Z' })]);
    await auRepos();
    expect(tentatives.get('/jamais')).toBe(DELAIS_S.length + 1);
    const w = (await t.call('GET', '/webhooks', org.cle)).json().webhooks[0];
    expect(w.dernieres_livraisons).toMatchObject([
      { genre: 'nouvelle', statut: 'epuisee', tentatives: 6, reponse: 500 },
    ]);
    expect(w.echecs_consecutifs).toBe(6);
    expect(await debitsDe(org.id)).toEqual([]);
  });
  it('sends nothing while the organisation has no credits, holds nothing against the subscriber, and delivers once it has', async () => {
    const org = await t.organisation({ acces: 'data' });
    await abonner(org.cle, '/sans-credit', { genres: ['nouvelle'], filtres: { insee: ['31555'] } });
    const { restants } = await balanceOf(t.db, org.id, null);
    await debit(t.db, {
      organisationId: org.id,
      cleId: null,
      genre: 'debit',
      credits: restants,
      operation: 'test',
      requete: null,
    });
    await importer([appartement({ id: '8001', insee: '31555', code_postal: '31000', vu_le: '2025-06-01T08:00:00Z' })]);
    const enAttente = await attendre(
      async () => (await t.call('GET', '/webhooks', org.cle)).json().webhooks[0],
      (w) => w.dernieres_livraisons[0]?.tentatives >= 2,
    );
    expect(tentatives.get('/sans-credit')).toBeUndefined();
    expect(enAttente).toMatchObject({ actif: true, echecs_consecutifs: 0 });
    expect(enAttente.dernieres_livraisons[0]).toMatchObject({ statut: 'echec', reponse: null });
    await t.admin('POST', `/organisations/${org.id}/credits`, { credits: 10, motif: 'recharge' });
    await auRepos();
    expect(recusSur('/sans-credit')).toHaveLength(1);
    expect(await debitsDe(org.id)).toEqual([{ credits: -1, requete: recusSur('/sans-credit')[0].json.id }]);
  });
});

describe('watches and alerts', () => {
  it('gives a watch its new matches once, served 15 minutes after they come up, to reads and to webhooks', async () => {
    const org = await t.organisation({ acces: 'data' });
    const creee = await t.call('POST', '/veilles', org.cle, {
      nom: 'Bordeaux pas cher',
      criteres: { insee: ['33063'], prix_max: 150_000, surface_min: 20 },
    });
    expect(creee.statusCode, creee.body).toBe(200);
    const veille = creee.json().veille;
    await abonner(org.cle, '/veilles', { genres: ['veille.resultat'] });
    // One new match, one too dear that drops into the range later (a match then, once), one too small.
    await importer([
      appartement({ id: '6001', insee: '33063', code_postal: '33000', prix: 140_000, vu_le: '2025-07-01T08:00:00Z' }),
      appartement({
        id: '6002',
        insee: '33063',
        code_postal: '33000',
        prix: 170_000,
        surface: 35,
        vu_le: '2025-07-01T08:00:00Z',
      }),
      appartement({
        id: '6003',
        insee: '33063',
        code_postal: '33000',
        prix: 90_000,
        surface: 12,
        vu_le: '2025-07-01T08:00:00Z',
      }),
    ]);
    await importer([
      appartement({
        id: '6002',
        insee: '33063',
        code_postal: '33000',
        prix: 145_000,
        surface: 35,
        vu_le: '2025-07-05T08:00:00Z',
      }),
      appartement({
        id: '6002',
        insee: '33063',
        code_postal: '33000',
        prix: 140_000,
        surface: 35,
        vu_le: '2025-07-09T08:00:00Z',
      }),
    ]);
    await auRepos();
    const ids = await Promise.all(
      ['6001', '6002'].map(async (id) => (await annonceDuPortail(t.db, `portal_a:${id}`)).id),
    );
    const { rows } = await t.db.query(
      `SELECT annonce_id, disponible_le - releve_le AS delai FROM veilles_resultats WHERE veille_id = $1 ORDER BY id`,
      [veille.id],
    );
    expect(rows.map((r) => r.annonce_id)).toEqual(ids);
    expect(rows.every((r) => r.delai.minutes === 15)).toBe(true);
    // Not served yet: nothing read, nothing debited, and the reader is told when.
    const tot = await t.call('GET', '/veilles/resultats', org.cle);
    expect(tot.statusCode, tot.body).toBe(200);
    expect(tot.json()).toMatchObject({ resultats: [], a_jour: true, credits: { debites: 0 } });
    expect(tot.json().prochain_le).not.toBeNull();
    expect(recusSur('/veilles')).toHaveLength(0);

    // 15 minutes later.
    await t.db.query(`UPDATE veilles_resultats SET disponible_le = now() WHERE veille_id = $1`, [veille.id]);
    await t.db.query(`UPDATE livraisons SET prochaine_le = now() WHERE evenement LIKE 'resultat:%'`);
    const w = (await t.call('GET', '/webhooks', org.cle)).json().webhooks[0];
    await reveillerAbonnement(runtime.client, { taskQueue: runtime.taskQueue, webhookId: w.id, delaisS: DELAIS_S });
    const lus = await t.call(
      'GET',
      `/veilles/resultats?curseur=${encodeURIComponent(tot.json().curseur_suivant)}`,
      org.cle,
    );
    expect(lus.json().resultats.map((r: any) => [r.genre, r.annonce.id])).toEqual(
      ids.map((id) => ['veille.resultat', id]),
    );
    expect(lus.json().credits.debites).toBe(2);
    await auRepos();
    const livres = recusSur('/veilles');
    expect(livres.map((r) => r.json.donnees.annonce.id)).toEqual(ids);
    expect(livres[0].json).toMatchObject({
      genre: 'veille.resultat',
      donnees: { veille_id: veille.id, nature: 'recherche' },
    });
  });

  it('follows one address with an alert: its novelties and the listings that come up there', async () => {
    const org = await t.organisation({ acces: 'data' });
    const cle = '33063_1234_00010';
    await t.db.query(
      `INSERT INTO adresses (dataset, cle_ban, type, numero, insee, commune, libelle, lat, lon, source)
       VALUES ('live', $1, 'numero', 10, '33063', 'Bordeaux', '10 Rue Test 33000 Bordeaux', 44.84, -0.58, 'test')`,
      [cle],
    );
    const inconnue = await t.call('POST', '/alertes', org.cle, { cle_ban: '33063_9999_09999' });
    expect(inconnue.json().code).toBe('adresse_introuvable');
    const creee = await t.call('POST', '/alertes', org.cle, { cle_ban: cle.toUpperCase(), nom: 'La maison d’en face' });
    expect(creee.statusCode, creee.body).toBe(200);
    const alerte = creee.json().veille;
    expect(alerte).toMatchObject({ nature: 'adresse', cle_ban: cle });
    // A DPE at that number, as an importer journals it; one at another number.
    await t.db.query(
      `INSERT INTO journal_adresses (dataset, genre, reference, cle_ban, insee, date_source, detail, source)
       VALUES ('live', 'dpe', 'dpe-1', $1, '33063', '2025-09-01', '{"etiquette": "F"}', 'ADEME'),
              ('live', 'dpe', 'dpe-2', '33063_1234_00012', '33063', '2025-09-01', '{"etiquette": "C"}', 'ADEME')`,
      [cle],
    );
    // A listing the portal places at that number (within 15 m), and its drop.
    const ici = { insee: '33063', code_postal: '33000', position: { lat: 44.84, lon: -0.58 } };
    await importer([appartement({ id: '7001', ...ici, vu_le: '2025-09-02T08:00:00Z' })]);
    await importer([appartement({ id: '7001', ...ici, prix: 390_000, vu_le: '2025-09-05T08:00:00Z' })]);
    expect((await annonceDuPortail(t.db, 'portal_a:7001')).cle_ban).toBe(cle);
    await auRepos();
    const { rows } = await t.db.query(`SELECT genre, donnees FROM veilles_resultats WHERE veille_id = $1 ORDER BY id`, [
      alerte.id,
    ]);
    // The two journals are fanned out side by side: their results come in either order.
    const vus = rows.map((r) => [r.genre, r.donnees.evenement.journal, r.donnees.evenement.genre]);
    expect(vus.sort()).toEqual([
      ['alerte.resultat', 'adresses', 'dpe'],
      ['alerte.resultat', 'annonces', 'baisse_prix'],
      ['alerte.resultat', 'annonces', 'nouvelle'],
    ]);
    expect(rows.find((r) => r.donnees.evenement.journal === 'adresses').donnees).toMatchObject({
      cle_ban: cle,
      annonce: null,
      evenement: { detail: { etiquette: 'F' } },
    });
  });

  it('follows one listing with an alert', async () => {
    const org = await t.organisation({ acces: 'data' });
    const suivie = (await annonceDuPortail(t.db, 'portal_a:2001')).id;
    const creee = await t.call('POST', '/alertes', org.cle, { annonce: suivie });
    expect(creee.statusCode, creee.body).toBe(200);
    expect((await t.call('POST', '/alertes', org.cle, { annonce: 'inconnue' })).json().code).toBe('ressource_absente');
    await importer([{ portail: 'portal_a', id: '2001', vu_le: '2025-08-01T08:00:00Z', statut: 'withdrawn' }]);
    await auRepos();
    const { rows } = await t.db.query(`SELECT genre, donnees FROM veilles_resultats WHERE veille_id = $1`, [
      creee.json().veille.id,
    ]);
    expect(rows.map((r) => [r.genre, r.donnees.evenement.genre])).toEqual([['alerte.resultat', 'retrait']]);
    const liste = (await t.call('GET', '/veilles', org.cle)).json();
    expect(liste.veilles).toMatchObject([{ nature: 'annonce', annonce_id: suivie, resultats: 1 }]);
    const suppr = await t.call('POST', `/veilles/${creee.json().veille.id}`, org.cle, {});
    expect(suppr.json()).toMatchObject({ supprime: true });
    expect((await t.call('GET', '/veilles', org.cle)).json().veilles).toEqual([]);
  });
});

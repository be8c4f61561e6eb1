import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns/promises';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import type { Operation } from '../../domain/catalogue.ts';
import { estimationOperations } from '../../domain/estimation/operations.ts';
import { decodagesCommences } from '../../domain/estimation/photos.ts';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { createOpenAiModel } from '../../lib/model.ts';
import { createOutboundHttp } from '../../lib/outbound-http.ts';
import { startWorker, type RunningWorker } from '../../worker/worker.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import {
  imagesOf,
  MODEL_SERVER_MODEL,
  promptText,
  startModelServer,
  type ModelHandler,
  type ModelServer,
} from '../support/model-server.ts';
import { pngTronque } from '../support/png.ts';
import { createRuntime } from '../support/runtime.ts';

// estimer_bien_affine end to end: the api waits for the workflow on the run's Temporal dev server, the worker fetches
// the photos from a local https server (self-signed certificate, trusted by the worker's outbound client only, as the
// outbound client's own tests do) and asks the scripted model over HTTP. The live data is the generated territory.

let t: TestApp;
let runtime: Awaited<ReturnType<typeof createRuntime>>;
let model: ModelServer;
let worker: RunningWorker;
let photos: { url: string; hits: Map<string, number>; close(): void };
let tlsDir: string;
let answer: ModelHandler = () => ({ status: 500 });
/** Every name the api and the worker looked up, in order. */
const resolus: string[] = [];
const resolveur = async (nom: string) => {
  resolus.push(nom);
  // A name of the customer's that leads into a private network.
  if (nom === 'interne.test') return [{ address: '10.0.0.7', family: 4 }];
  return dnsLookup(nom, { all: true });
};

/** Text written in the JPEG's EXIF: the model must never see it. */
const SECRET_EXIF = 'Jean Secret-Proprietaire';

const MAISON = { type: 'maison', surface: 110, adresse: '11 rue des Pins Latresne', dpe: 'F' } as const;

async function photoAvecExif(): Promise<Buffer> {
  return sharp({ create: { width: 1600, height: 1200, channels: 3, background: { r: 180, g: 140, b: 90 } } })
    .jpeg()
    .withExif({
      IFD0: { Artist: SECRET_EXIF, ImageDescription: 'Salon' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '44/1 47/1 0/1', GPSLongitudeRef: 'W', GPSLongitude: '0/1 29/1 0/1' },
    })
    .toBuffer();
}

async function servePhotos() {
  execFileSync(
    'openssl',
    [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout', path.join(tlsDir, 'key.pem'), '-out', path.join(tlsDir, 'cert.pem'),
    ], // prettier-ignore
    { stdio: 'ignore' },
  );
  const cert = readFileSync(path.join(tlsDir, 'cert.pem'));
  const heavy = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(1_700_000)]);
  const bodies: Record<string, Buffer> = {
    '/salon.jpg': await photoAvecExif(),
    '/cuisine.png': await sharp({
      create: { width: 300, height: 200, channels: 4, background: { r: 20, g: 90, b: 200, alpha: 0.5 } },
    })
      .png()
      .toBuffer(),
    '/lourde.jpg': heavy,
    '/page.jpg': Buffer.from('<!DOCTYPE html><html><body>Pas une image</body></html>'),
    // The probe of issue #28: PNGs whose header says 6 300 × 6 300 in 16-bit RGBA (a second or more of CPU each to
    // decode), here with their pixel data cut short: only a decoding would tell.
    ...Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`/enorme-${i}.png`, pngTronque(6300, 6300)])),
  };
  const hits = new Map<string, number>();
  const server = https.createServer({ key: readFileSync(path.join(tlsDir, 'key.pem')), cert }, (req, res) => {
    const url = req.url ?? '';
    hits.set(url, (hits.get(url) ?? 0) + 1);
    if (url === '/redirige.jpg') return res.writeHead(302, { location: '/salon.jpg' }).end();
    const body = bodies[url];
    if (!body) return res.writeHead(404).end();
    // A lying Content-Type: the format is recognised from the bytes.
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://localhost:${(server.address() as AddressInfo).port}`,
    hits,
    cert,
    bodies,
    close: () => server.close(),
  };
}

let cert: Buffer;
let salonOriginal: Buffer;

beforeAll(async () => {
  tlsDir = mkdtempSync(path.join(tmpdir(), 'affine-tls-'));
  runtime = await createRuntime();
  t = await createTestApp({
    operations: estimationOperations as Operation[],
    services: { tasks: runtime.engine, outbound: createOutboundHttp({ allowLoopback: true, resolve: resolveur }) },
  });
  await loadSandbox(t.db, { dataset: 'live' });
  model = await startModelServer((body) => answer(body));
  const served = await servePhotos();
  photos = served;
  cert = served.cert;
  salonOriginal = served.bodies['/salon.jpg'];
  worker = await startWorker({
    address: runtime.address,
    taskQueue: runtime.taskQueue,
    activities: createActivities({
      db: t.db,
      model: createOpenAiModel({ baseURL: model.url, model: MODEL_SERVER_MODEL, timeoutMs: 20_000 }),
      // The test's trusted certificate is given to this client only; production trusts the system store.
      outbound: createOutboundHttp({ allowLoopback: true, ca: cert, resolve: resolveur }),
      modelConcurrency: 2,
    }),
  });
}, 180_000);
afterAll(async () => {
  await worker?.stop();
  await runtime?.close();
  await t?.close();
  await model?.close();
  photos?.close();
  if (tlsDir) rmSync(tlsDir, { recursive: true, force: true });
});
beforeEach(() => {
  photos.hits.clear();
  resolus.length = 0;
});

const post = (cle: string, url: string, body: unknown) =>
  t.app.inject({
    method: 'POST',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${cle}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });

/** The ledger's debits of estimer_bien_affine for an organisation, in credits. */
async function debits(organisationId: string): Promise<number[]> {
  const { body } = await t.admin('GET', `/organisations/${organisationId}/releve?limite=100`);
  return body.mouvements
    .filter((m: { genre: string; operation: string }) => m.operation === 'estimer_bien_affine')
    .map((m: { genre: string; credits: number }) => ({ genre: m.genre, credits: Math.abs(m.credits) }));
}

async function restants(organisationId: string): Promise<number> {
  return (await t.admin('GET', `/organisations/${organisationId}/releve`)).body.solde.restants;
}

const reponse = (ajustements: unknown[], vision = { equipements: [] as string[], constats: [] as string[] }) => ({
  json: { ajustements, vision },
});

async function expectNothingKept() {
  expect((await t.db.query('SELECT count(*)::int AS n FROM taches')).rows[0].n).toBe(0);
}

describe('estimer_bien_affine: the model refines, the server keeps it in check', () => {
  it('clips an adjustment of +60 % to its nature’s bound and says so; 30 credits', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const description = 'Maison entièrement rénovée en 2023, cuisine équipée, double vitrage.';
    answer = (body) => {
      // The client's fields reach the model as data.
      expect(promptText(body)).toContain('entièrement rénovée en 2023');
      return reponse([
        { nature: 'etat', pct: 60, motif: 'Rénovation complète récente.', appui: 'entièrement rénovée en 2023' },
      ]);
    };
    const avant = await restants(org.id);
    const res = await post(org.cle, '/estimations/affinees', { ...MAISON, description });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.affinage).toMatchObject({ applique: true, modele: MODEL_SERVER_MODEL });
    const ia = body.ajustements.filter((l: { source: string }) => l.source === 'ia');
    expect(ia).toEqual([
      expect.objectContaining({
        nature: 'etat',
        pct: 10,
        source: 'ia',
        motif: expect.stringContaining('rénovée en 2023'),
      }),
    ]);
    expect(body.affinage.raison).toMatch(/ramenée de \+60 % à \+10 %/);
    expect(body.limites.join(' ')).toMatch(/ramenée de \+60 % à \+10 %/);
    // The value moved by the bounded line only: the deterministic twin's price per m² with +10 points.
    const bareme = body.ajustements
      .filter((l: { source: string }) => l.source === 'bareme')
      .reduce((s: number, l: { pct: number }) => s + l.pct, 0);
    expect(body.valeur.prix_m2).toBe(Math.round(body.niveau.prix_m2_socle * (1 + (bareme + 10) / 100)));
    expect(body.valeur.bas).toBeLessThan(body.valeur.valeur);
    expect(body.valeur.haut).toBeGreaterThan(body.valeur.valeur);
    expect(body.vision).toBeNull();
    expect(body.credits.debites).toBe(30);
    expect(avant - (await restants(org.id))).toBe(30);
    expect(await debits(org.id)).toEqual([{ genre: 'debit', credits: 30 }]);
    await expectNothingKept();
  });

  it('drops a line whose support is in neither the fields nor the photos, keeps a grounded one', async () => {
    const org = await t.organisation({ acces: 'usage' });
    answer = () =>
      reponse([
        { nature: 'luminosite', pct: 3, motif: 'Vue dégagée.', appui: 'vue panoramique sur l’océan' },
        { nature: 'prestations', pct: 4, motif: 'Prestations soignées.', appui: 'cuisine équipée' },
        { nature: 'spa', pct: 5, motif: 'Spa.', appui: 'cuisine équipée' },
      ]);
    const res = await post(org.cle, '/estimations/affinees', {
      ...MAISON,
      description: 'Belle maison au calme.',
      qualites: ['Cuisine équipée'],
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const ia = body.ajustements.filter((l: { source: string }) => l.source === 'ia');
    expect(ia.map((l: { nature: string; pct: number }) => [l.nature, l.pct])).toEqual([['prestations', 4]]);
    expect(JSON.stringify(body.ajustements)).not.toContain('panoramique');
    expect(body.limites.join(' ')).toMatch(/« luminosite » \(\+3 %\) écartée : son appui ne se retrouve/);
    expect(body.limites.join(' ')).toMatch(/nature inconnue « spa »/);
    expect(body.affinage.raison).toMatch(/1 ligne\(s\) retenue\(s\), 2 écartée\(s\)/);
  });

  it('reads photos once, without their metadata, keeps no price in constats, returns and keeps no image', async () => {
    const org = await t.organisation({ acces: 'usage' });
    // The photo as served does carry the owner's name and a GPS position.
    const meta = await sharp(salonOriginal).metadata();
    expect(meta.exif).toBeDefined();
    expect(salonOriginal.includes(SECRET_EXIF)).toBe(true);
    let recues: Buffer[] = [];
    answer = (body) => {
      recues = imagesOf(body).map((image) => {
        expect(image.mime).toBe('image/jpeg');
        return image.bytes;
      });
      return reponse([{ nature: 'etat', pct: -6, motif: 'Sols à reprendre.', appui: 'Parquet abîmé au salon' }], {
        equipements: ['Cuisine équipée', 'Poêle à bois (valeur 3 000 €)'],
        constats: [
          'Parquet abîmé au salon',
          'Cuisine estimée à 15 000 €',
          'Travaux représentant 10 % de la valeur',
          'Peintures récentes',
        ],
      });
    };
    const res = await post(org.cle, '/estimations/affinees', {
      ...MAISON,
      photos: [`${photos.url}/salon.jpg`, `${photos.url}/cuisine.png`],
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(photos.hits.get('/salon.jpg')).toBe(1);
    expect(photos.hits.get('/cuisine.png')).toBe(1);

    // What the model received: two JPEGs, bounded, with no EXIF, no GPS, not the owner's name.
    expect(recues).toHaveLength(2);
    for (const image of recues) {
      const m = await sharp(image).metadata();
      expect(m.format).toBe('jpeg');
      expect(m.exif).toBeUndefined();
      expect(m.icc).toBeUndefined();
      expect(Math.max(m.width!, m.height!)).toBeLessThanOrEqual(1024);
      expect(image.includes('Exif')).toBe(false);
      expect(image.includes(SECRET_EXIF)).toBe(false);
      expect(image.includes('GPS')).toBe(false);
    }

    expect(body.vision).toEqual({
      disponible: true,
      photos_recues: 2,
      photos_analysees: 2,
      equipements: ['Cuisine équipée'],
      constats: ['Parquet abîmé au salon', 'Peintures récentes'],
      raison_indisponible: null,
    });
    expect(JSON.stringify(body.vision)).not.toMatch(/€|%|\d{3} ?000/);
    expect(body.limites.join(' ')).toMatch(/2 constat\(s\) des photos retiré\(s\)/);
    // A line grounded on what the photos showed is kept.
    expect(body.ajustements).toContainEqual(expect.objectContaining({ nature: 'etat', pct: -6, source: 'ia' }));
    // Nothing of the images is returned or kept.
    const brut = res.body;
    for (const image of recues) expect(brut).not.toContain(image.toString('base64').slice(0, 60));
    expect(brut).not.toContain('data:image');
    await expectNothingKept();
  });

  it('refuses photos over 1.6 MB or not images with a clear problem, each fetched once, nothing debited', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const appels = model.requests.length;
    const avant = await restants(org.id);
    const res = await post(org.cle, '/estimations/affinees', {
      ...MAISON,
      photos: [`${photos.url}/lourde.jpg`, `${photos.url}/page.jpg`, `${photos.url}/salon.jpg`],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    const problem = res.json();
    expect(problem.code).toBe('parametres_invalides');
    expect(problem.erreurs).toEqual([
      { champ: 'photos[0]', emplacement: 'corps', message: expect.stringMatching(/n° 1 est plus lourde que 1,6 Mo/) },
      { champ: 'photos[1]', emplacement: 'corps', message: expect.stringMatching(/pas une image JPEG, PNG ou WebP/) },
    ]);
    expect(problem.detail).toMatch(/Rien n’a été débité/);
    expect(photos.hits.get('/lourde.jpg')).toBe(1);
    expect(photos.hits.get('/page.jpg')).toBe(1);
    expect(photos.hits.get('/salon.jpg')).toBe(1);
    expect(model.requests.length).toBe(appels);
    expect(await restants(org.id)).toBe(avant);
    expect(await debits(org.id)).toEqual([]);
    await expectNothingKept();
  });

  it('refuses, before fetching anything, too many links, http, private addresses, duplicates; a redirect is not followed', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const appels = model.requests.length;
    const cases: Array<[string[], RegExp, string]> = [
      [Array.from({ length: 13 }, (_, i) => `${photos.url}/p${i}.jpg`), /12 photos au plus/, 'photos'],
      [[`http://localhost/${'salon.jpg'}`], /https/, 'photos[0]'],
      [['https://10.1.2.3/salon.jpg'], /n’est pas joignable \(adresse publique https attendue\)/, 'photos[0]'],
      [[`${photos.url}/salon.jpg`, `${photos.url}/salon.jpg`], /même lien que photos\[0\]/, 'photos[1]'],
    ];
    for (const [liste, message, champ] of cases) {
      const res = await post(org.cle, '/estimations/affinees', { ...MAISON, photos: liste });
      expect(res.statusCode, res.body).toBe(400);
      const problem = res.json();
      expect(problem.code).toBe('parametres_invalides');
      expect(problem.erreurs.map((e: { champ: string }) => e.champ)).toContain(champ);
      expect(JSON.stringify(problem.erreurs)).toMatch(message);
    }
    expect([...photos.hits.values()].reduce((a, b) => a + b, 0)).toBe(0);

    const res = await post(org.cle, '/estimations/affinees', { ...MAISON, photos: [`${photos.url}/redirige.jpg`] });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().erreurs[0]).toMatchObject({ champ: 'photos[0]', message: expect.stringMatching(/redirection/) });
    expect(photos.hits.get('/redirige.jpg')).toBe(1);
    expect(photos.hits.get('/salon.jpg')).toBeUndefined();
    expect(model.requests.length).toBe(appels);
    expect(await debits(org.id)).toEqual([]);
  });

  it('refuses 11 huge PNGs and a link answering 404 on the 404 alone: no photo decoded, nothing debited', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const appels = model.requests.length;
    const avant = await restants(org.id);
    const decodages = decodagesCommences();
    const enormes = Array.from({ length: 11 }, (_, i) => `${photos.url}/enorme-${i}.png`);
    const res = await post(org.cle, '/estimations/affinees', {
      ...MAISON,
      photos: [...enormes, `${photos.url}/absente.png`],
    });
    expect(res.statusCode, res.body).toBe(400);
    const problem = res.json();
    expect(problem.code).toBe('parametres_invalides');
    // Every link was fetched and the 404 refuses the request there: no header read, no pixel decoded.
    expect(problem.erreurs).toEqual([
      {
        champ: 'photos[11]',
        emplacement: 'corps',
        message: 'La photo n° 12 est inaccessible : le serveur a répondu HTTP 404.',
      },
    ]);
    expect(decodagesCommences()).toBe(decodages);
    for (let i = 0; i < 11; i++) expect(photos.hits.get(`/enorme-${i}.png`)).toBe(1);
    expect(photos.hits.get('/absente.png')).toBe(1);
    expect(model.requests.length).toBe(appels);
    expect(await restants(org.id)).toBe(avant);
    expect(await debits(org.id)).toEqual([]);
    await expectNothingKept();
  });

  it('refuses a photo over 25 Mpx with its number and dimensions, before decoding any photo', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const decodages = decodagesCommences();
    const res = await post(org.cle, '/estimations/affinees', {
      ...MAISON,
      photos: [`${photos.url}/salon.jpg`, `${photos.url}/enorme-0.png`],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().erreurs).toEqual([
      {
        champ: 'photos[1]',
        emplacement: 'corps',
        message: expect.stringMatching(/^La photo n° 2 fait 6\s300 × 6\s300 pixels \(39,7 Mpx\) : 25 Mpx au plus/u),
      },
    ]);
    expect(decodagesCommences()).toBe(decodages);
    expect(await debits(org.id)).toEqual([]);
  });

  it('words a private address, a name leading to one, a name that does not resolve, a refused connection alike', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const ferme = https.createServer();
    await new Promise<void>((resolve) => ferme.listen(0, '127.0.0.1', resolve));
    const port = (ferme.address() as AddressInfo).port;
    await new Promise((resolve) => ferme.close(resolve));
    const refus = async (lien: string) => {
      const res = await post(org.cle, '/estimations/affinees', { ...MAISON, photos: [lien] });
      expect(res.statusCode, res.body).toBe(400);
      return res.json();
    };
    const prive = await refus('https://10.0.0.1/salon.jpg');
    const interne = await refus('https://interne.test/salon.jpg');
    const absent = await refus('https://photos.nexiste-pas.invalid/salon.jpg');
    const fermee = await refus(`https://localhost:${port}/salon.jpg`);
    for (const problem of [prive, interne, absent, fermee]) {
      expect(problem.erreurs).toEqual([
        {
          champ: 'photos[0]',
          emplacement: 'corps',
          message: 'La photo n° 1 n’est pas joignable (adresse publique https attendue).',
        },
      ]);
    }
    // Both names were looked up to be fetched; nothing in the answers tells which one resolved.
    expect(resolus).toEqual(expect.arrayContaining(['interne.test', 'photos.nexiste-pas.invalid']));
    expect(interne.detail).toBe(absent.detail);
    expect(await debits(org.id)).toEqual([]);
  });

  it('looks up no name given by the customer when the request is refused without the network', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const exfiltration = `https://${Buffer.from('cle=pk_live_secrete').toString('hex')}.exfil.invalid/salon.jpg`;
    const res = await post(org.cle, '/estimations/affinees', {
      ...MAISON,
      photos: [exfiltration, 'https://10.0.0.1/salon.jpg'],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().erreurs.map((e: { champ: string }) => e.champ)).toEqual(['photos[1]']);
    expect(resolus).toEqual([]);
  });

  it('counts the photos a refused request made the service fetch in the organisation’s per-minute rate', async () => {
    const org = await t.organisation({ acces: 'usage', quota_minute: 20 });
    const modeles = () => t.call('GET', '/modeles', org.cle);
    // The rate is counted per calendar minute: the scenario must not straddle two.
    const premier = await modeles();
    expect(premier.statusCode, premier.body).toBe(200);
    const reste = Number(premier.headers['ratelimit-reset']);
    if (reste < 25) await new Promise((resolve) => setTimeout(resolve, (reste + 1) * 1000));

    const enormes = Array.from({ length: 11 }, (_, i) => `${photos.url}/enorme-${i}.png`);
    const res = await post(org.cle, '/estimations/affinees', {
      ...MAISON,
      photos: [...enormes, `${photos.url}/absente.png`],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().detail).toMatch(/Rien n’a été débité ; la lecture des photos compte dans le quota par minute/);
    // Twelve links fetched count as twelve calls: of 20 calls a minute, at most 8 are left (1 or 2 already taken,
    // and an instance may hold one call it took from the database before the charge), instead of 17 or more.
    let servis = 0;
    let refus: { statusCode: number; json(): { code: string } } | null = null;
    for (let i = 0; i < 20 && !refus; i++) {
      const r = await modeles();
      if (r.statusCode === 200) servis += 1;
      else refus = r;
    }
    expect(refus?.statusCode).toBe(429);
    expect(refus?.json().code).toBe('quota_minute');
    expect(servis).toBeLessThanOrEqual(8);
    expect(await debits(org.id)).toEqual([]);
  }, 90_000);

  it('a failing model gives the deterministic estimate, said, at 10 credits', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const jumeau = await post(org.cle, '/estimations', MAISON);
    expect(jumeau.statusCode, jumeau.body).toBe(200);
    const deterministe = jumeau.json();

    for (const panne of [
      () => ({ status: 503 }),
      () => ({ content: '{"ajustements": [ pas du JSON' }),
    ] as ModelHandler[]) {
      answer = panne;
      photos.hits.clear();
      const avant = await restants(org.id);
      const res = await post(org.cle, '/estimations/affinees', { ...MAISON, photos: [`${photos.url}/salon.jpg`] });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.affinage.applique).toBe(false);
      expect(body.affinage.modele).toBeNull();
      expect(body.affinage.raison).toMatch(/Estimation déterministe servie.*10 crédits débités au lieu de 30/);
      expect(body.affinage.raison).toMatch(/indisponible|inexploitable/);
      expect(body.ajustements.every((l: { source: string }) => l.source === 'bareme')).toBe(true);
      expect(body.valeur).toEqual(deterministe.valeur);
      expect(body.comparables).toEqual(deterministe.comparables);
      expect(body.vision).toMatchObject({ disponible: false, photos_recues: 1, photos_analysees: 0, constats: [] });
      expect(photos.hits.get('/salon.jpg')).toBe(1);
      expect(body.credits.debites).toBe(10);
      expect(avant - (await restants(org.id))).toBe(10);
    }
    expect(await debits(org.id)).toEqual([
      { genre: 'debit', credits: 10 },
      { genre: 'debit', credits: 10 },
    ]);
    await expectNothingKept();
  });

  it('answers the deterministic estimate’s own refusals, nothing debited', async () => {
    const org = await t.organisation({ acces: 'usage' });
    answer = () => reponse([]);
    const res = await post(org.cle, '/estimations/affinees', { type: 'maison', surface: 90, insee: '67482' });
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json().code).toBe('ressource_absente');
    expect(await debits(org.id)).toEqual([]);
  });
});

describe('estimer_bien_affine without the task engine', () => {
  it('serves the deterministic estimate, says why, and debits 10', async () => {
    const sans = await createTestApp({ operations: estimationOperations as Operation[] });
    try {
      await loadSandbox(sans.db, { dataset: 'live' });
      const org = await sans.organisation({ acces: 'usage' });
      const appels = model.requests.length;
      const res = await sans.app.inject({
        method: 'POST',
        url: '/api/v1/estimations/affinees',
        headers: { authorization: `Bearer ${org.cle}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ ...MAISON, description: 'Maison rénovée.' }),
      });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.affinage.applique).toBe(false);
      expect(body.affinage.raison).toMatch(/moteur des tâches.*10 crédits débités au lieu de 30/);
      expect(body.credits.debites).toBe(10);
      expect(model.requests.length).toBe(appels);
    } finally {
      await sans.close();
    }
  }, 120_000);
});

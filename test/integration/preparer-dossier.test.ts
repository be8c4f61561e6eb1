import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import type { FileDelivery } from '../../domain/documents/telechargement.ts';
import { createOpenAiModel } from '../../lib/model.ts';
import { createOutboundHttp } from '../../lib/outbound-http.ts';
import { createFolderStorage } from '../../lib/storage.ts';
import { startWorker } from '../../worker/worker.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { contractOf } from '../support/contrat.ts';
import { IDU, importSite, pdftotext, POINT_ABSENT, POINT_UB, RULES_UA } from '../support/dossiers.ts';
import { hasPluData, readingModel, servePdfs } from '../support/plu-fixtures.ts';
import { MODEL_SERVER_MODEL, promptText, startModelServer, type ModelServer } from '../support/model-server.ts';
import { createRuntime } from '../support/runtime.ts';

// preparer_dossier on Temporal, as a client calls it: a Latresne parcel imported through the real importers, zone UA
// whose rules are in lire_plu's readings cache, the notice drafted by the scripted model through the real openai
// client, the sheets stored and downloaded through the documents' signed links and read back by poppler.

interface Monde {
  t: TestApp;
  runtime: Awaited<ReturnType<typeof createRuntime>>;
  dir: string;
}

let ok: Monde;
let sansStockage: Monde;
let model: ModelServer;
let pdfs: Awaited<ReturnType<typeof servePdfs>> | undefined;
let contrat: Awaited<ReturnType<typeof contractOf>>;

async function monde(stockage: boolean, modelUrl: string | null): Promise<Monde> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-dossiers-files-'));
  const runtime = await createRuntime();
  const delivery: FileDelivery = {
    storage: createFolderStorage(dir),
    secret: 'secret-des-liens-de-test-0123456789',
    baseUrl: null,
    linkTtlS: 3600,
  };
  const t = await createTestApp({ services: { tasks: runtime.engine, files: delivery } });
  // The zone never read points at the real Latresne rules, served as a commune's site would; the other at nothing.
  await importSite(t.db, {
    lectureUrl: pdfs ? `${pdfs.url}/latresne.pdf` : undefined,
    absentUrl: pdfs ? `${pdfs.url}/absent.pdf` : undefined,
  });
  const worker = await startWorker({
    address: runtime.address,
    taskQueue: runtime.taskQueue,
    activities: createActivities({
      db: t.db,
      model: modelUrl ? createOpenAiModel({ baseURL: modelUrl, model: MODEL_SERVER_MODEL, timeoutMs: 20_000 }) : null,
      outbound: createOutboundHttp({ allowLoopback: true }),
      modelConcurrency: 2,
      files: stockage ? delivery : undefined,
    }),
  });
  runtime.close = ((close) => async () => {
    await worker.stop();
    await close();
  })(runtime.close);
  return { t, runtime, dir };
}

/** The model reads rules as plu-fixtures' good reader; it drafts notices from the facts it is given, slipping in one
 * figure of its own that the server must remove. */
function noticeModel(body: Record<string, any>) {
  if (body.response_format?.json_schema?.name === 'lecture_reglement_plu') return readingModel(body);
  const faits = JSON.parse(promptText(body).split('Faits du dossier :\n')[1]!);
  const p = faits.projets[0];
  return {
    json: {
      terrain: [
        `Le terrain de ${faits.terrain.superficie_m2} m² porte une maison. Il est desservi par une voie au sud.`,
      ],
      projet: [
        `Le projet est une ${p.nature} de ${p.emprise_m2} m² accolée à la maison. Sa hauteur sera de 9,40 m au faîtage.`,
        'Les menuiseries seront en aluminium.',
      ],
    },
  };
}

beforeAll(async () => {
  model = await startModelServer(noticeModel);
  if (hasPluData) pdfs = await servePdfs();
  ok = await monde(true, model.url);
  // A worker that cannot store files: its drawing step fails, and the task with it.
  sansStockage = await monde(false, null);
  contrat = await contractOf(ok.t.app);
}, 120_000);
afterAll(async () => {
  for (const m of [ok, sansStockage]) {
    await m?.runtime.close();
    await m?.t.close();
    if (m) await rm(m.dir, { recursive: true, force: true });
  }
  await model?.close();
  pdfs?.close();
});

/** A dossier costs 200 of the 500 credits an organisation opens with: each call gets an organisation of its own. */
const cles = new Map<string, string>();
const post = async (m: Monde, body: unknown) => {
  const cle = (await m.t.organisation({ acces: 'usage' })).cle;
  const res = await m.t.call('POST', '/urbanisme/dossiers', cle, body);
  if (res.headers.location) cles.set(res.headers.location as string, cle);
  return res;
};
const attendreFin = async (m: Monde, location: string) => {
  const res = await m.t.app.inject({
    method: 'GET',
    url: `${location}?attendre=60`,
    headers: { authorization: `Bearer ${cles.get(location)}` },
  });
  contrat.expectDescribed('resultat_preparer_dossier', res);
  return res.json();
};
const fichier = async (m: Monde, url: string) => {
  const res = await m.t.app.inject({ method: 'GET', url });
  expect(res.statusCode).toBe(200);
  return res.rawPayload;
};
const fr = (v: number) => `${v.toFixed(2).replace('.', ',')} m`;
const extension = (surface: number, extra: Record<string, unknown> = {}) => ({
  nature: 'extension',
  largeur_m: 5,
  profondeur_m: surface / 5,
  ancrage: 'accole_batiment',
  cote: 'sud',
  hauteur_m: 3,
  ...extra,
});

describe('preparer_dossier on Temporal', () => {
  it('prepares the declaration of a 15 m² extension at an address: form, pieces in order, sheets, rules quoted', async () => {
    const started = await post(ok, {
      adresse: '12 Avenue de la Libération',
      code_postal: '33360',
      projets: [extension(15)],
      annotations: [
        { type: 'arbre', position_wgs84: [-0.4944, 44.7817], etat: 'conserve', diametre_m: 4 },
        { type: 'vue_photo', position_wgs84: [-0.4945, 44.7815], azimut_deg: 0, numero: 1, piece: 'proche' },
      ],
    });
    expect(started.statusCode, started.body).toBe(202);
    contrat.expectDescribed('preparer_dossier', started);
    expect(started.json().credits).toEqual({ debites: 200, restants: 300 });
    const body = await attendreFin(ok, started.headers.location as string);
    expect(body.tache.statut, JSON.stringify(body.erreur)).toBe('terminee');
    expect(body.credits.debites).toBe(200);
    const r = body.resultat;
    expect(r.parcelle.idu).toBe(IDU);
    expect(r.formalite).toMatchObject({
      retenue: 'declaration_prealable',
      declaree: null,
      correction: null,
      cerfa: { numero: '13703' },
    });
    expect(r.formalite.decisions[0].article).toBe('R.421-17 f)');
    expect(r.pieces.map((p: any) => `${p.code}:${p.etat}`)).toEqual([
      'DPMI1:a_fournir_par_le_demandeur',
      'DPMI2:prete',
      'DPMI3:prete',
      'DPMI4:prete',
      'DPMI5:a_fournir_par_le_demandeur',
      'DPMI6:a_fournir_par_le_demandeur',
      'DPMI7:a_fournir_par_le_demandeur',
      'DPMI8:a_fournir_par_le_demandeur',
      'NOTICE:prete',
      'TAXES:a_produire_par_une_operation',
    ]);
    expect(r.pieces.at(-1).operation).toBe('taxe_amenagement');
    expect(r.donnees_cerfa).toMatchObject({
      formulaire: '13703',
      demandeur: 'personne_physique',
      surface_plancher_creee_m2: 15,
      terrain: { code_insee: '33234', code_postal: '33360', parcelles: [{ section: 'AB', numero: '0012' }] },
    });
    // Rules: the cached reading of UA, each checked with its quotation.
    expect(r.regles.etat).toBe('lues');
    const recul = r.regles.verifications.find((v: any) => v.theme === 'limites_separatives');
    expect(recul).toMatchObject({
      statut: 'respectee',
      valeur_exigee: 3,
      valeur_mesuree: 7.5,
      citation: RULES_UA[0].citation,
      page: 12,
      article: 'UA 7',
    });
    expect(r.regles.verifications.find((v: any) => v.theme === 'hauteur')).toMatchObject({
      statut: 'respectee',
      valeur_mesuree: 3,
    });
    expect(r.alertes).toEqual([]);
    expect(r.regles.non_mesurables.join(' ')).toContain('tuiles canal');

    // The plot plan: its scale, title block and the distances to the boundaries the JSON gives.
    const plan = r.feuilles.find((f: any) => f.piece === 'plan_masse');
    const textePlan = pdftotext(await fichier(ok, plan.url));
    expect(textePlan).toContain(`Échelle : ${plan.echelle} — Format ${plan.format}`);
    expect(textePlan).toContain('Plan de masse — DPMI2');
    expect(textePlan).toContain('12 Avenue de la Libération 33360 Latresne');
    expect(textePlan).toContain('Arbre conservé');
    expect(textePlan).toContain('Photo 1 (proche)');
    for (const d of r.projets[0].distances_limites) expect(textePlan).toContain(fr(d.distance_m));
    const coupe = r.feuilles.find((f: any) => f.piece === 'coupe');
    const texteCoupe = pdftotext(await fichier(ok, coupe.url));
    expect(texteCoupe).toContain(`Échelle : ${coupe.echelle}`);
    expect(texteCoupe).toContain(fr(r.coupes[0].distances_limites[1].distance_m));

    // The notice: the invented height removed and counted, the rest kept, delivered as PDF and Word.
    expect(r.notice).toMatchObject({ etat: 'prete', chiffres_ecartes: 1, modele: MODEL_SERVER_MODEL });
    expect(r.notice.projet.join(' ')).not.toContain('9,40');
    expect(r.notice.projet.join(' ')).toContain('15 m²');
    expect(pdftotext(await fichier(ok, r.notice.fichiers.pdf.url))).toContain('Les menuiseries seront en aluminium.');
  });

  it('gives a permit at 45 m², corrects the declared formality with its article, and puts the notice at PCMI4', async () => {
    const started = await post(ok, {
      idu: IDU,
      formalite: 'declaration_prealable',
      projets: [extension(45)],
      coupes: false,
    });
    const r = (await attendreFin(ok, started.headers.location as string)).resultat;
    expect(r.formalite).toMatchObject({
      retenue: 'permis_de_construire',
      declaree: 'declaration_prealable',
      cerfa: { numero: '13406' },
    });
    expect(r.formalite.correction).toContain('R.421-14 b)');
    expect(r.formalite.correction).toContain('au-delà de 40 m² en zone urbaine du PLU');
    expect(r.pieces.slice(0, 5).map((p: any) => p.code)).toEqual(['PCMI1', 'PCMI2', 'PCMI3', 'PCMI4', 'PCMI5']);
    expect(r.pieces[3]).toMatchObject({ titre: 'Notice décrivant le terrain et le projet', etat: 'prete' });
    // No sections asked: the plot plan alone.
    expect(r.feuilles.map((f: any) => f.piece)).toEqual(['plan_masse']);
    expect(r.pieces[2].etat).toBe('a_fournir_par_le_demandeur');
  });

  it('alerts on an extension 2 m from a boundary where the rule says 3 m, quoting the rule and its page', async () => {
    const started = await post(ok, {
      idu: IDU,
      projets: [
        {
          nature: 'annexe',
          largeur_m: 3,
          profondeur_m: 4,
          ancrage: 'depuis_limite',
          cote: 'ouest',
          distance_limite_m: 2,
          hauteur_m: 2.5,
        },
      ],
    });
    const r = (await attendreFin(ok, started.headers.location as string)).resultat;
    const v = r.regles.verifications.find((x: any) => x.theme === 'limites_separatives');
    expect(v).toMatchObject({ statut: 'non_respectee', valeur_exigee: 3, valeur_mesuree: 2 });
    expect(r.alertes).toHaveLength(1);
    expect(r.alertes[0]).toContain(`« ${RULES_UA[0].citation} »`);
    expect(r.alertes[0]).toContain('article UA 7, page 12');
    expect(r.formalite.retenue).toBe('declaration_prealable');
  });

  it.skipIf(!hasPluData)(
    `reads a zone never read as a child of the dossier, cached then for everyone${hasPluData ? '' : ' (skipped: ../shared/data/plu_pdf absent)'}`,
    async () => {
      const started = await post(ok, {
        ...POINT_UB,
        projets: [{ nature: 'piscine', largeur_m: 10, profondeur_m: 12 }],
      });
      const body = await attendreFin(ok, started.headers.location as string);
      const r = body.resultat;
      expect(r.zone.code).toBe('UC');
      expect(r.regles).toMatchObject({ etat: 'lues', raison: null, lecture: { modele: MODEL_SERVER_MODEL } });
      // Within the dossier's price: 200 debited, nothing more.
      expect(body.credits.debites).toBe(200);
      const { rows } = await ok.t.db.query(`SELECT zone FROM lectures_plu ORDER BY zone`);
      expect(rows.map((x) => x.zone)).toEqual(['UA', 'UC']);
      // A 120 m² basin: a permit.
      expect(r.formalite.retenue).toBe('permis_de_construire');
    },
    90_000,
  );

  it.skipIf(!hasPluData)('says a zone whose rules cannot be read, checks nothing and still completes', async () => {
    const started = await post(ok, { ...POINT_ABSENT, projets: [{ nature: 'abri', largeur_m: 2, profondeur_m: 2 }] });
    const body = await attendreFin(ok, started.headers.location as string);
    expect(body.tache.statut).toBe('terminee');
    const r = body.resultat;
    expect(r.zone.code).toBe('UB');
    expect(r.regles).toMatchObject({ etat: 'lecture_echouee', verifications: [], non_mesurables: [] });
    expect(r.regles.raison).toContain('document_inaccessible');
    expect(r.manquants).toContain(r.regles.raison);
    expect(r.alertes).toEqual([]);
  });

  it('calls the task’s webhook at its end, signed, with the dossier’s result address', async () => {
    const received: Array<{ body: string; signature: string }> = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ body, signature: String(req.headers['svc-signature']) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/dossiers`;
      const org = await ok.t.organisation({ acces: 'data' });
      const abonnement = await ok.t.call('POST', '/webhooks', org.cle, { url, genres: ['tache.echouee'] });
      expect(abonnement.statusCode, abonnement.body).toBe(200);
      const started = await ok.t.call('POST', '/urbanisme/dossiers', org.cle, {
        idu: IDU,
        projets: [extension(15)],
        webhook: url,
      });
      expect(started.statusCode, started.body).toBe(202);
      const id = started.json().tache.id;
      await expect.poll(() => received.length, { timeout: 30_000 }).toBe(1);
      expect(JSON.parse(received[0].body)).toMatchObject({
        genre: 'tache.terminee',
        donnees: { tache: { id, operation: 'preparer_dossier', resultat_url: `/api/v1/urbanisme/dossiers/${id}` } },
      });
      expect(received[0].signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    } finally {
      receiver.close();
    }
  });

  it('answers 404 before reserving anything for a parcel the cadastre lacks', async () => {
    const res = await post(ok, { idu: '33234000ZZ0001', projets: [extension(15)] });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('ressource_absente');
  });

  it('gives the credits back when a step fails, and says why', async () => {
    const started = await post(sansStockage, { idu: IDU, projets: [extension(15)] });
    expect(started.statusCode).toBe(202);
    const body = await attendreFin(sansStockage, started.headers.location as string);
    expect(body.tache.statut).toBe('echouee');
    expect(body.erreur.code).toBe('service_indisponible');
    expect(body.credits).toEqual({ debites: 0, restants: 500 });
  });
});

import { createHash } from 'node:crypto';
import { mkdtemp, rm, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation, Services } from '../../../domain/catalogue.ts';
import { genererDocument, readGeneratedFile, wantsFile } from '../../../domain/documents/operations.ts';
import {
  purgeExpiredFiles,
  serveDownload,
  type DownloadParams,
  type FileDelivery,
} from '../../../domain/documents/telechargement.ts';
import { ApiError } from '../../../domain/errors.ts';
import { createFolderStorage } from '../../../lib/storage.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { pdfText, rapportAcceptation } from './outils-generation.ts';

let t: TestApp;
let bare: TestApp;
let dir: string;
let files: FileDelivery;
let cle: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'svc-fichiers-'));
  files = { storage: createFolderStorage(dir), secret: 'secret-de-test', baseUrl: null, linkTtlS: 3600 };
  // `files` is not yet a field of Services: the cast goes once the field is declared there.
  t = await createTestApp({ operations: [genererDocument as Operation], services: { files } as Partial<Services> });
  // No file storage at all (an override of the configured one): the operation says so.
  bare = await createTestApp({ operations: [genererDocument as Operation], services: { files: undefined } });
  cle = (await t.organisation()).cle;
});
afterAll(async () => {
  await t?.close();
  await bare?.close();
  await rm(dir, { recursive: true, force: true });
});

const post = (payload: unknown, app: TestApp = t, key = cle, headers: Record<string, string> = {}) =>
  app.app.inject({
    method: 'POST',
    url: '/api/v1/documents',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(payload),
  });

/** The route parameters of a link, as the download route will receive them. */
function paramsOf(url: string): DownloadParams & { id: string; nom: string; expire: string; signature: string } {
  const parsed = new URL(url, 'http://api.test');
  const [, id, nom] = /^\/api\/v1\/documents\/fichiers\/([^/]+)\/([^/]+)$/.exec(parsed.pathname)!;
  return {
    id,
    nom: decodeURIComponent(nom),
    expire: parsed.searchParams.get('expire')!,
    signature: parsed.searchParams.get('signature')!,
  };
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const small = {
  type: 'lettre',
  titre: 'Offre d’achat — 14 rue des Lilas',
  destinataire: 'Madame Claire Durand\n8 allée des Tilleuls\n33200 Bordeaux',
  date: '2025-03-01',
  sections: [
    {
      paragraphes: [
        'Je vous propose **232 000 €** net vendeur. Joignable au 06 12 34 56 78 ou à acheteur@exemple.fr.',
        'Financement : [à compléter].',
      ],
    },
  ],
};

describe('POST /documents', () => {
  it('generates the PDF, bills 2 credits and hands out a signed link that serves the file', async () => {
    const res = await post(rapportAcceptation());
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      type: 'rapport',
      titre: 'Étude de marché : Bordeaux-Caudéran, cœur de quartier',
      format: 'pdf',
      type_fichier: 'application/pdf',
      nom_fichier: 'etude-de-marche-bordeaux-cauderan-coeur-de-quartier.pdf',
      sections: 20,
      a_completer: 0,
      credits: { debites: 2 },
    });
    expect(res.headers['svc-credits-debites']).toBe('2');
    expect(body.fichier.url).toMatch(
      /^\/api\/v1\/documents\/fichiers\/[A-Za-z0-9]{32}\/etude-de-marche-[a-z-]+\.pdf\?/,
    );
    expect(Date.parse(body.fichier.expire_le) - Date.now()).toBeGreaterThan(3500_000);

    const download = await serveDownload(files, paramsOf(body.fichier.url));
    expect(download.status).toBe(200);
    if (download.status !== 200) return;
    expect(download.body.byteLength).toBe(body.taille_octets);
    expect(createHash('sha256').update(download.body).digest('hex')).toBe(body.fichier.sha256);
    expect(download.headers['Content-Type']).toBe('application/pdf');
    expect(download.headers['Content-Disposition']).toBe(`inline; filename="${body.nom_fichier}"`);
    const text = await pdfText(download.body);
    expect(text).toContain('20. Évolution n°20 : l’œil sur les prix à Caudéran');
    expect(text).toContain('Lot n°200');
  });

  it('generates the Word file when asked, saved rather than opened', async () => {
    const res = await post({ ...small, format: 'docx' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.type_fichier).toBe('application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect(body.nom_fichier).toBe('offre-d-achat-14-rue-des-lilas.docx');
    const download = await serveDownload(files, paramsOf(body.fichier.url));
    if (download.status !== 200) throw new Error('200 attendu');
    expect(Buffer.from(download.body.subarray(0, 2)).toString()).toBe('PK');
    expect(download.headers['Content-Disposition']).toMatch(/^attachment; /);
  });

  it('counts the to-complete marks and masks contacts in texte, the file keeping them', async () => {
    const body = (await post(small)).json();
    expect(body.a_completer).toBe(1);
    expect(body.texte).toContain('Joignable au [téléphone masqué] ou à [e-mail masqué].');
    expect(body.texte).not.toMatch(/06 12|acheteur@/);
    const download = await serveDownload(files, paramsOf(body.fichier.url));
    if (download.status !== 200) throw new Error('200 attendu');
    const text = await pdfText(download.body);
    expect(text).toContain('06 12 34 56 78');
    expect(text).toContain('acheteur@exemple.fr');
  });

  it('refuses oversized or malformed input with 400 field by field, without debit', async () => {
    const section = { titre: 'S' };
    const cases: Array<[unknown, string]> = [
      [{ ...small, sections: Array(21).fill(section) }, 'sections'],
      [
        { ...small, sections: [{ tableau: { colonnes: Array(13).fill('c'), lignes: [] } }] },
        'sections[0].tableau.colonnes',
      ],
      [
        { ...small, sections: [{ tableau: { colonnes: ['a'], lignes: Array(201).fill(['x']) } }] },
        'sections[0].tableau.lignes',
      ],
      [
        {
          ...small,
          sections: [
            {
              tableau: {
                colonnes: ['a', 'b'],
                lignes: [
                  ['1', '2'],
                  ['1', '2', '3'],
                ],
              },
            },
          ],
        },
        'sections[0].tableau.lignes[1]',
      ],
      [{ ...small, sections: [{ paragraphes: Array(41).fill('p') }] }, 'sections[0].paragraphes'],
      [{ ...small, sections: [{ puces: Array(41).fill('p') }] }, 'sections[0].puces'],
      [{ ...small, titre: 'x'.repeat(4001) }, 'titre'],
      [{ ...small, date: 'x'.repeat(201) }, 'date'],
      [{ ...small, sources: Array(21).fill('s') }, 'sources'],
      [{ ...small, sections: [] }, 'sections'],
      [{ ...small, sections: [{}] }, 'sections[0]'],
      [{ ...small, type: 'memo' }, 'type'],
      [{ ...small, format: 'odt' }, 'format'],
      [{ ...small, police: 'Comic Sans' }, '(corps)'],
    ];
    for (const [payload, champ] of cases) {
      const res = await post(payload);
      expect(res.statusCode, champ).toBe(400);
      const problem = res.json();
      expect(problem.code).toBe('parametres_invalides');
      expect(
        problem.erreurs.map((e: { champ: string }) => e.champ),
        JSON.stringify(problem.erreurs),
      ).toContain(champ);
      expect(res.headers['svc-credits-debites']).toBeUndefined();
    }
  });

  it('answers 503 when no file storage is configured', async () => {
    const org = await bare.organisation();
    const res = await post(small, bare, org.cle);
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('service_indisponible');
  });
});

describe('download links', () => {
  let url: string;
  beforeAll(async () => {
    url = (await post(small)).json().fichier.url;
  });

  it('fail when any part is altered', async () => {
    const good = paramsOf(url);
    const flip = (text: string) => text.slice(0, -1) + (text.endsWith('A') ? 'B' : 'A');
    const altered: DownloadParams[] = [
      { ...good, signature: flip(good.signature) },
      { ...good, id: flip(good.id) },
      { ...good, nom: good.nom.replace('.pdf', '.docx') },
      { ...good, expire: String(Number(good.expire) + 3600) },
      { ...good, signature: undefined },
      { ...good, id: '../../etc/passwd' },
    ];
    for (const params of altered) {
      const error = await refusal(serveDownload(files, params));
      expect(error.code).toBe('ressource_absente');
      expect(error.message).toMatch(/invalide/);
    }
  });

  it('fail once expired, and the purge then removes the file', async () => {
    const good = paramsOf(url);
    const after = new Date((Number(good.expire) + 1) * 1000);
    const error = await refusal(serveDownload(files, good, after));
    expect(error.code).toBe('ressource_absente');
    expect(error.message).toMatch(/expiré/);

    const file = path.join(dir, 'documents', good.id);
    const old = new Date(Date.now() - 2 * 3600_000);
    await utimes(file, old, old);
    expect(await purgeExpiredFiles(files)).toBeGreaterThanOrEqual(1);
    const gone = await refusal(serveDownload(files, good));
    expect(gone.message).toMatch(/plus conservé/);
  });

  it('carry the public base address when one is configured', async () => {
    const res = await post(small, t, cle);
    const absolute = { ...files, baseUrl: 'https://api.exemple.fr' };
    const { signedLink } = await import('../../../domain/documents/telechargement.ts');
    const { id, nom } = paramsOf(res.json().fichier.url);
    expect(signedLink(absolute, id, nom, new Date('2030-01-01T00:00:00Z'))).toMatch(
      new RegExp(
        `^https://api\\.exemple\\.fr/api/v1/documents/fichiers/${id}/${nom.replace('.', '\\.')}\\?expire=1893456000&signature=`,
      ),
    );
  });
});

describe('content negotiation', () => {
  it('wants the file only when Accept names its type at least as high as JSON', () => {
    const pdf = { type_fichier: 'application/pdf' };
    expect(wantsFile('application/pdf', pdf)).toBe(true);
    expect(wantsFile('application/pdf, application/json;q=0.5', pdf)).toBe(true);
    expect(wantsFile('application/json, application/pdf;q=0.5', pdf)).toBe(false);
    expect(wantsFile('*/*', pdf)).toBe(false);
    expect(wantsFile(undefined, pdf)).toBe(false);
    expect(wantsFile('application/pdf;q=0', pdf)).toBe(false);
    expect(
      wantsFile('application/vnd.openxmlformats-officedocument.wordprocessingml.document', {
        type_fichier: 'application/pdf',
      }),
    ).toBe(false);
  });

  it('reads back the bytes of a generated file for the route', async () => {
    const body = (await post(small)).json();
    const file = await readGeneratedFile({ files } as unknown as Services, body);
    expect(file.bytes.byteLength).toBe(body.taille_octets);
    expect(file.headers['Content-Type']).toBe('application/pdf');
  });
});

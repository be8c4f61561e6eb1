import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Db } from '../../db/client.ts';
import { ImportError, importSource, nouveauRapport } from '../import/source.ts';
import { LECTURE_VERSION } from '../urbanisme/lectures.ts';
import { checkReading, LECTURE_SCHEMA } from './lecture.ts';
import { extractPages, isScanned } from './pdf-text.ts';
import { PDF_MAX_BYTES } from './service.ts';

/**
 * Readings of zones put in lire_plu's cache from a folder: rules documents (PDF) and `lectures-plu.jsonl`, one line a
 * zone: `{url, fichier, zone, modele, regles, definitions, renvois}`, the reading in the shape a model answers
 * lire_plu (domain/plu/lecture.ts), `fichier` the PDF of the folder published at `url`. Every quotation is checked
 * against the PDF's text exactly as a model's are (`checkReading`): what the text does not prove is discarded and
 * counted. The demonstration territory's readings come this way (domain/sandbox/parts/reglements.ts); readings made
 * by another instance can too.
 *
 * The readings cache is keyed by the document's content (SHA-256), not by dataset: a reading is the same whoever asks.
 * Re-importing the same folder changes nothing but the documents' fetch date (lire_plu refetches a document a day
 * after it was last fetched).
 */

const Ligne = LECTURE_SCHEMA.extend({
  url: z.url({ protocol: /^https$/ }),
  fichier: z
    .string()
    .regex(/^[\w.-]+\.pdf$/i, 'un nom de fichier PDF du dossier, sans chemin')
    .refine((f) => !f.startsWith('.'), 'un nom de fichier PDF du dossier'),
  zone: z.string().trim().min(1).max(20),
  modele: z.string().trim().min(1).max(100),
});

export async function importLecturesPlu(db: Db, dossier: string) {
  const { report, rejeter } = nouveauRapport(dossier);
  const jsonl = path.join(dossier, 'lectures-plu.jsonl');
  const texte = await readFile(jsonl, 'utf8').catch(() => {
    throw new ImportError(`${jsonl} introuvable : le dossier doit tenir lectures-plu.jsonl et les PDF qu’il nomme.`);
  });
  const documents = new Map<string, { sha256: string; pages: string[]; scanne: boolean }>();
  let regles = 0;
  let ecartees = 0;
  for (const [i, brute] of texte.split('\n').entries()) {
    if (brute.trim() === '') continue;
    report.lus++;
    let ligne: z.infer<typeof Ligne>;
    try {
      const lue = Ligne.safeParse(JSON.parse(brute));
      if (!lue.success) {
        rejeter(i + 1, lue.error.issues.map((e) => `${e.path.join('.') || 'ligne'} : ${e.message}`).join(' ; '));
        continue;
      }
      ligne = lue.data;
    } catch {
      rejeter(i + 1, 'JSON invalide');
      continue;
    }
    const cle = `${ligne.fichier}\u0000${ligne.url}`;
    let document = documents.get(cle);
    if (!document) {
      const fichier = path.join(dossier, ligne.fichier);
      const info = await stat(fichier).catch(() => null);
      if (!info?.isFile() || info.size > PDF_MAX_BYTES) {
        rejeter(i + 1, `${ligne.fichier} : absent du dossier, ou de plus de ${PDF_MAX_BYTES} octets`);
        continue;
      }
      const octets = await readFile(fichier);
      const { pages, pageCount } = await extractPages(new Uint8Array(octets));
      document = { sha256: createHash('sha256').update(octets).digest('hex'), pages, scanne: isScanned(pages) };
      await db.query(
        `INSERT INTO reglements_pdf (url, sha256, taille_octets, pages, nb_pages, scanne) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (url) DO UPDATE SET sha256 = EXCLUDED.sha256, taille_octets = EXCLUDED.taille_octets,
           pages = EXCLUDED.pages, nb_pages = EXCLUDED.nb_pages, scanne = EXCLUDED.scanne, recupere_le = now()`,
        [ligne.url, document.sha256, octets.length, JSON.stringify(pages), pageCount, document.scanne],
      );
      documents.set(cle, document);
    }
    if (document.scanne) {
      rejeter(i + 1, `${ligne.fichier} : PDF sans texte (numérisé), aucune citation ne peut y être vérifiée`);
      continue;
    }
    const lecture = checkReading({ pages: document.pages, zoneCode: ligne.zone, documentUrl: ligne.url }, [ligne]);
    if (lecture.pages_lues.length === 0) {
      rejeter(i + 1, `zone ${ligne.zone} : ${lecture.non_trouve[0]?.raison ?? 'chapitre introuvable'}`);
      continue;
    }
    regles += lecture.regles.length;
    ecartees += lecture.citations_ecartees;
    await db.query(
      `INSERT INTO lectures_plu (document_sha256, zone, version, contenu, modele) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (document_sha256, zone, version) DO UPDATE SET contenu = EXCLUDED.contenu, modele = EXCLUDED.modele,
         extrait_le = now()
       WHERE lectures_plu.contenu IS DISTINCT FROM EXCLUDED.contenu OR lectures_plu.modele <> EXCLUDED.modele`,
      [document.sha256, ligne.zone, LECTURE_VERSION, JSON.stringify(lecture), ligne.modele],
    );
    report.gardes++;
  }
  report.details.push(
    `documents : ${documents.size}`,
    `règles gardées : ${regles}`,
    `citations écartées (introuvables dans le texte du PDF) : ${ecartees}`,
  );
  return report;
}

export const lecturesPluSource = importSource(
  'lectures-plu',
  'Lectures de zones mises dans le cache de lire_plu : un dossier de règlements PDF et lectures-plu.jsonl (chaque citation vérifiée dans le texte du PDF)',
  (db, dossier) => importLecturesPlu(db, dossier),
);

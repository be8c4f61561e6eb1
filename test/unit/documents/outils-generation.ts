/**
 * Readers written by others for the generated files: poppler (`pdftotext`, `pdftohtml`, `pdfinfo`) for the PDF,
 * LibreOffice headless for the Word file. Each LibreOffice run gets a profile of its own, so that test files running
 * side by side do not fight over the profile lock.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { DocumentSource } from '../../../domain/documents/document.ts';
import { DEJAVU_DIR } from '../../../domain/documents/fonts.ts';

const run = promisify(execFile);

async function withTempDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-documents-'));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** pdftotext's reading; `layout` keeps the columns of a table on one line per row. Pages separated by \f. */
export function pdfText(bytes: Uint8Array, layout = false): Promise<string> {
  return withTempDir(async (dir) => {
    const file = path.join(dir, 'document.pdf');
    await writeFile(file, bytes);
    const { stdout } = await run('pdftotext', [...(layout ? ['-layout'] : []), '-enc', 'UTF-8', file, '-'], {
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  });
}

/** Text pieces with their font as pdftohtml sees them: bold text comes wrapped in <b>. */
export function pdfXml(bytes: Uint8Array): Promise<string> {
  return withTempDir(async (dir) => {
    const file = path.join(dir, 'document.pdf');
    await writeFile(file, bytes);
    const { stdout } = await run('pdftohtml', ['-xml', '-i', '-stdout', '-q', file], { maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  });
}

export interface Word {
  text: string;
  page: number;
  xMin: number;
  xMax: number;
  yMin: number;
}

/** Every word with its box, in points from the top left (pdftotext -bbox), and the page size. */
export function pdfWords(bytes: Uint8Array): Promise<{ width: number; words: Word[] }> {
  return withTempDir(async (dir) => {
    const file = path.join(dir, 'document.pdf');
    await writeFile(file, bytes);
    const { stdout } = await run('pdftotext', ['-bbox', '-enc', 'UTF-8', file, '-'], { maxBuffer: 64 * 1024 * 1024 });
    const words: Word[] = [];
    let page = 0;
    for (const m of stdout.matchAll(
      /<page |<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</g,
    )) {
      if (m[0] === '<page ') page++;
      else words.push({ text: m[4], page, xMin: Number(m[1]), yMin: Number(m[2]), xMax: Number(m[3]) });
    }
    return { width: Number(/<page width="([\d.]+)"/.exec(stdout)![1]), words };
  });
}

export async function pdfInfo(bytes: Uint8Array): Promise<{ pages: number; width: number; height: number }> {
  return withTempDir(async (dir) => {
    const file = path.join(dir, 'document.pdf');
    await writeFile(file, bytes);
    const { stdout } = await run('pdfinfo', [file]);
    const size = /Page size:\s+([\d.]+) x ([\d.]+)/.exec(stdout)!;
    return { pages: Number(/Pages:\s+(\d+)/.exec(stdout)![1]), width: Number(size[1]), height: Number(size[2]) };
  });
}

/** The fonts a PDF uses (pdffonts), subset tags dropped, and whether the PDF carries each. */
export function pdfFonts(bytes: Uint8Array): Promise<Array<{ name: string; embedded: boolean }>> {
  return withTempDir(async (dir) => {
    const file = path.join(dir, 'document.pdf');
    await writeFile(file, bytes);
    const { stdout } = await run('pdffonts', [file]);
    const [, rule, ...rows] = stdout.split('\n');
    // Columns are fixed-width (a type may hold a space: "CID TrueType"): the rule under the titles gives them.
    const columns = [...rule.matchAll(/-+/g)].map((m) => [m.index, m.index + m[0].length]);
    const cell = (row: string, i: number) => row.slice(columns[i][0], columns[i][1]).trim();
    return rows
      .filter((row) => row.trim())
      .map((row) => ({ name: cell(row, 0).replace(/^[A-Z]{6}\+/, ''), embedded: cell(row, 3) === 'yes' }));
  });
}

/**
 * Word file converted by LibreOffice headless (`html`, `pdf`, `txt:Text (encoded):UTF8`…); the converted bytes.
 * `dejaVuOnly` hides the machine's fonts from LibreOffice and gives it DejaVu alone, as on a Debian machine where
 * nothing but `fonts-dejavu-core` is installed: Arial then comes out in DejaVu Sans, wider than Arial.
 */
export function libreOffice(
  docx: Uint8Array,
  target: string,
  extension: string,
  { dejaVuOnly = false } = {},
): Promise<Buffer> {
  return withTempDir(async (dir) => {
    const file = path.join(dir, 'document.docx');
    await writeFile(file, docx);
    const env = { ...process.env };
    if (dejaVuOnly) {
      // The system's rules (Arial → sans-serif → DejaVu Sans…) still apply; only the font directories change.
      env.FONTCONFIG_FILE = path.join(dir, 'fonts.conf');
      await writeFile(
        env.FONTCONFIG_FILE,
        `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir>${DEJAVU_DIR}</dir>
  <include ignore_missing="yes">/etc/fonts/conf.d</include>
  <cachedir>${path.join(dir, 'fontconfig')}</cachedir>
</fontconfig>
`,
      );
    }
    await run(
      'soffice',
      [
        `-env:UserInstallation=file://${path.join(dir, 'profil')}`,
        '--headless',
        '--norestore',
        '--convert-to',
        target,
        '--outdir',
        dir,
        file,
      ],
      { timeout: 120_000, env },
    );
    return readFile(path.join(dir, `document.${extension}`));
  });
}

/** The 20-section report of the acceptance: a 200-row table in section 8, French typography everywhere. */
export function rapportAcceptation(type: DocumentSource['type'] = 'rapport'): DocumentSource {
  const lignes = Array.from({ length: 200 }, (_, i) => [
    `Lot n°${i + 1}`,
    `Résidence « Les Œillets » bât. ${String.fromCharCode(65 + (i % 26))}${Math.floor(i / 26)}`,
    `${40 + (i % 60)} m²`,
    `${(150_000 + i * 1250).toLocaleString('fr-FR').replace(/\u202f/g, ' ')} €`,
    i % 3 === 0 ? 'Très bon état' : 'À rénover',
  ]);
  return {
    type,
    titre: 'Étude de marché : Bordeaux-Caudéran, cœur de quartier',
    sous_titre: 'Prix, loyers et rendements — édition 2025',
    destinataire: 'SCI Les Chênes\n12 rue Sainte-Catherine\n33000 Bordeaux',
    date: '2025-03-14',
    sections: Array.from({ length: 20 }, (_, s) => ({
      titre: `Évolution n°${s + 1} : l’œil sur les prix à Caudéran`,
      paragraphes: [
        `Le prix médian s’établit à **${4000 + s * 10} €/m²** en 2024 ; les « maisons d’œuvre » restent prisées.`,
        'Sur un an, la hausse atteint 3,2 % : un marché où l’on négocie peu.',
      ],
      puces: ['Proximité du tramway **ligne D**', 'Écoles à moins de 500 m'],
      ...(s === 7 ? { tableau: { colonnes: ['Lot', 'Adresse', 'Surface', 'Prix', 'État'], lignes } } : {}),
    })),
    sources: ['DVF (Etalab), valeurs foncières géolocalisées 2024', 'INSEE, recensement 2021'],
  };
}

/** Text with runs of spaces (and no-break spaces) made one, to compare lines of a table read back. */
export const squash = (text: string) => text.replace(/[\s\u00a0\u202f]+/g, ' ').trim();

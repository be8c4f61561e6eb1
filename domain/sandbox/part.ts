import type { Territoire } from './territoire.ts';

/**
 * A part of the sandbox: the files of one source, written in its official format over the generated territory, for
 * the source's real importer to load them (load.ts). generate.ts lists the parts.
 */
export interface SandboxPart<S extends string = string, R extends Fichiers | Promise<Fichiers> = Fichiers> {
  source: S;
  /**
   * Names and contents of the files, in import order: text written in UTF-8, or bytes as they are (a source
   * published in another charset, see `windows1252`). The same seed gives the same bytes: a part draws only from
   * streams of its own (`new Alea(seed, 'label')`) and never changes the territories, which every part shares, so
   * that another part never moves its files.
   */
  fichiers(seed: number, territoires: Territoire[]): R;
}

/** What a part writes; a part that needs asynchronous work (a PDF) returns a promise of it. */
export type Fichiers = Array<[nom: string, contenu: string | Uint8Array]>;

/** Marks of fictitious content in free fields. */
export const FICTIF = {
  societe: '(FICTIVE)',
  iris: '(contour fictif)',
  zonage: '(zonage fictif)',
  loyer: '(loyer fictif)',
  servitude: '(servitude fictive)',
} as const;

function champCsv(value: string | number, separateur: string): string {
  const text = String(value);
  return text.includes(separateur) || text.includes('"') || text.includes('\n')
    ? `"${text.replace(/"/g, '""')}"`
    : text;
}

export function csv(
  entete: readonly string[],
  lignes: Array<Record<string, string | number>>,
  separateur: string,
): string {
  const out = [entete.map((c) => champCsv(c, separateur)).join(separateur)];
  for (const l of lignes) out.push(entete.map((c) => champCsv(l[c] ?? '', separateur)).join(separateur));
  return `${out.join('\n')}\n`;
}

/** A FeatureCollection with one feature a line, as GDAL writes them: small, and readable in a diff. */
export function featureCollection(nom: string, features: object[]): string {
  return `{"type":"FeatureCollection","name":${JSON.stringify(nom)},"features":[\n${features.map((f) => JSON.stringify(f)).join(',\n')}\n]}\n`;
}

/** The characters of bytes 0x80-0x9F in Windows-1252 (€, ’, œ…); its other bytes are Latin-1's, code for code. */
const CP1252_80_9F = new Map(
  Array.from({ length: 32 }, (_, i) => [new TextDecoder('windows-1252').decode(Uint8Array.of(0x80 + i)), 0x80 + i]),
);

/** `text` in Windows-1252, the charset of sources published for spreadsheets (rent indicators, A/B/C zoning). */
export function windows1252(text: string): Uint8Array {
  const octets = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const octet = code < 0x80 || (code >= 0xa0 && code <= 0xff) ? code : CP1252_80_9F.get(text[i]);
    if (octet === undefined) throw new Error(`« ${text[i]} » n’a pas d’octet en Windows-1252`);
    octets[i] = octet;
  }
  return octets;
}

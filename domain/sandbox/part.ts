import type { Territoire } from './territoire.ts';

/**
 * A part of the sandbox: the files of one source, written in its official format over the generated territory, for
 * the source's real importer to load them (load.ts). generate.ts lists the parts.
 */
export interface SandboxPart<S extends string = string> {
  source: S;
  /**
   * Names and contents of the files, in import order. The same seed gives the same bytes: a part draws only from
   * streams of its own (`new Alea(seed, 'label')`) and never changes the territories, which every part shares, so
   * that another part never moves its files.
   */
  fichiers(seed: number, territoires: Territoire[]): Array<[nom: string, contenu: string]>;
}

/** Marks of fictitious content in free fields. */
export const FICTIF = {
  societe: '(FICTIVE)',
  iris: '(contour fictif)',
  zonage: '(zonage fictif)',
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

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { annoncesPart } from './parts/annonces.ts';
import { banPart } from './parts/ban.ts';
import { bodaccPart } from './parts/bodacc.ts';
import { cadastrePart } from './parts/cadastre.ts';
import { dpePart } from './parts/dpe.ts';
import { dvfPart } from './parts/dvf.ts';
import { gpuPart } from './parts/gpu.ts';
import { irisPart } from './parts/iris.ts';
import { loyersPart } from './parts/loyers.ts';
import { permisPart } from './parts/permis.ts';
import { preMarcheDpePart, preMarcheDvfPart } from './parts/pre-marche.ts';
import { reglementsPart } from './parts/reglements.ts';
import { sirenePart } from './parts/sirene.ts';
import { supPart } from './parts/sup.ts';
import { zonageAbcPart } from './parts/zonage-abc.ts';
import { COMMUNES, territoire } from './territoire.ts';

export { FICTIF } from './part.ts';

/**
 * The frozen sandbox territory, generated: five real communes (`SANDBOX_COMMUNES`) with fictitious streets, numbers,
 * sales, DPE, permits, companies and notices placed around their real centres, written in the official formats so
 * that the real importers load them (domain/sandbox/load.ts). Everything derives from one seed through a small PRNG:
 * the same seed gives the same bytes, so the sandbox served to pk_test_ keys is frozen.
 *
 * The streets and numbers (territoire.ts) are drawn first; then each part (parts/, one a source) writes the files of
 * its source over them. Coherence between the files, which the importers rely on:
 * - BAN numbers carry their cadastral parcels; DVF sales, permits and SIRENE establishments use those numbers, street
 *   codes and parcels, so that each importer attaches them to the same BAN keys.
 * - DPE rows name their BAN key (`Identifiant__BAN`); audits name their DPE.
 * - SCI are SIRENE legal units with their seat at a BAN number; their BODACC notices carry their SIREN and seat.
 * - Strasbourg (67482) is Alsace-Moselle: addresses, DPE, permits and companies, but no DVF sale.
 * - Rent indicators cover the five communes (the arrondissement, as the source does); the A/B/C zoning names Paris.
 * - The cadastre's parcels are those the BAN numbers carry; the planning packages cover each commune (Paris 11e by
 *   the PLU of Paris, Lille and Strasbourg by their PLUi) and each commune has an easement of AC1, PM1 and I4.
 * - Listings stand at BAN numbers (or near them); an agency that sells them is the SIRENE agency of its commune.
 *
 * Fictitious on purpose, and said so where a format has a free field: company names end with « (FICTIVE) », IRIS
 * names with « (contour fictif) », zoning labels with « (zonage fictif) », the communes of the rent indicators with
 * « (loyer fictif) » (the A/B/C zoning is the real one). Identifiers are drawn from ranges the real files do not use
 * in practice (street codes Z001…, mutation numbers from 9 000 001, SIREN 999…, DPE numbers with S in fifth place),
 * so that a real import into the same dataset overwrites nothing of it by accident; the rent indicators, keyed by
 * commune and edition like the real ones, are replaced by a real edition of the same year imported into the sandbox.
 *
 * No natural person is named anywhere: street names are of places and things, sole traders are written without any
 * name (as SIRENE publishes a unit under partial diffusion), permits filed by private persons have no applicant,
 * and notices name companies only.
 */

/** The seed of the frozen sandbox (Latresne's INSEE code; any fixed value would do). */
export const SANDBOX_SEED = 33_234;

/**
 * The parts, in the order their files must be imported (BAN first: the others attach to it). A new source of the
 * sandbox is one more part here, and its importer in load.ts.
 */
const PARTS = [
  banPart,
  dvfPart,
  // The pre-market history: more sales and DPE, drawn with known propensities (parts/pre-marche.ts).
  preMarcheDvfPart,
  dpePart,
  preMarcheDpePart,
  permisPart,
  sirenePart,
  bodaccPart,
  irisPart,
  gpuPart,
  // The zones' rules documents and their readings, after the zones that name them.
  reglementsPart,
  supPart,
  cadastrePart,
  loyersPart,
  zonageAbcPart,
  annoncesPart,
] as const;

export type SandboxSource = (typeof PARTS)[number]['source'];
/** Sources of the generated files, in import order. */
export const SANDBOX_SOURCES: readonly SandboxSource[] = [...new Set(PARTS.map((p) => p.source))];
/**
 * Paths of the generated files by source, each list in import order (DPE before audits, units before establishments).
 * A source published as packages (the planning and easement upload folders) has the folder holding its packages.
 */
export type SandboxFiles = Record<SandboxSource, string[]>;

/**
 * Writes the sandbox files into `dir` (created if needed) and returns their paths by source. The same seed writes
 * the same bytes.
 */
export async function generateSandbox(dir: string, { seed }: { seed: number }): Promise<SandboxFiles> {
  await mkdir(dir, { recursive: true });
  const territoires = COMMUNES.map((c) => territoire(seed, c));
  const fichiers = {} as SandboxFiles;
  for (const part of PARTS) {
    // Several parts may write files of one source (the pre-market history's DPE and sales): they add up, in order.
    fichiers[part.source] ??= [];
    for (const [nom, contenu] of await part.fichiers(seed, territoires)) {
      const fichier = path.join(dir, nom);
      await mkdir(path.dirname(fichier), { recursive: true });
      await writeFile(fichier, contenu, 'utf8');
      // A file in a folder belongs to a package: the top folder is what the importer reads.
      const unite = nom.includes('/') ? path.join(dir, nom.slice(0, nom.indexOf('/'))) : fichier;
      if (!fichiers[part.source].includes(unite)) fichiers[part.source].push(unite);
    }
  }
  return fichiers;
}

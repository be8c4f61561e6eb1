import { existsSync } from 'node:fs';
import { glob, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { createDb, type Db } from '../../db/client.ts';
import { connectDataDir } from '../../db/embedded.ts';
import { migrate } from '../../db/migrate.ts';
import { loadConfigOrExit } from '../../lib/config.ts';
import { ImportError } from './source.ts';
import { sousVerrouDeChargement } from './verrou.ts';

/**
 * What the two CLIs that load data share (`npm run import`, `npm run sandbox`): their arguments and usage, the
 * database they write into, and how an error ends them.
 */

/** Prints `usage`, after `message` (an error) when given, and exits: 1 on an error, 0 for --help. */
export function sortirAvecUsage(usage: string, message?: string): never {
  if (message) console.error(`Erreur : ${message}\n`);
  console.error(usage);
  process.exit(message ? 1 : 0);
}

/** The parsed command line; an argument it cannot parse, or `help`, prints `usage` and exits. */
export function lireArguments<C extends ParseArgsConfig>(config: C, usage: string): ReturnType<typeof parseArgs<C>> {
  let parsed: ReturnType<typeof parseArgs<C>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    return sortirAvecUsage(usage, (error as Error).message);
  }
  if ((parsed.values as { help?: boolean }).help) sortirAvecUsage(usage);
  return parsed;
}

/**
 * Runs `work` on the database of DATABASE_URL, else on the embedded server of DATA_DIR (the running one, or one
 * started for the time of the work), migrated first; the pool, and a server started here, end with it.
 */
export async function avecBaseDeDonnees<T>(work: (db: Db) => Promise<T>): Promise<T> {
  const config = loadConfigOrExit();
  const server = await connectDataDir(config);
  // Four connections for the work, one for the load lock it holds.
  const db = createDb(server.url, 5);
  try {
    await migrate(db);
    return await sousVerrouDeChargement(
      db,
      () =>
        console.error(
          'Un autre chargement de données est en cours (le premier démarrage de npm start, ou un autre import) : celui-ci attend qu’il finisse…',
        ),
      () => work(db),
    );
  } finally {
    await db.end().catch(() => {});
    await server.stop().catch(() => {});
  }
}

/** The exit code of a CLI's `main`: an error it expects (`connue`) is said as it is, any other after `interruption`. */
export async function codeDeSortie(
  main: () => Promise<number>,
  interruption: string,
  connue: (error: unknown) => error is Error,
): Promise<number> {
  try {
    return await main();
  } catch (error) {
    console.error(
      `Erreur : ${connue(error) ? error.message : `${interruption} : ${(error as Error).message ?? String(error)}`}`,
    );
    return 1;
  }
}

const GLOB = /[*?[\]{}]/;

/**
 * The files of a source published in pieces that these paths give: a file as it is, a folder's files whose name
 * matches `fichiers` (at any depth), a glob's matches (`dvf-2024/*.csv.gz`; a folder it matches, as a folder). Sorted,
 * each once. Throws when a path gives none.
 */
export async function fichiersDesChemins(chemins: string[], fichiers: RegExp): Promise<string[]> {
  const out = new Set<string>();
  const ajouter = async (chemin: string, explicite: boolean): Promise<number> => {
    const info = await stat(chemin).catch(() => null);
    if (info?.isFile()) {
      if (!explicite && !fichiers.test(path.basename(chemin))) return 0;
      out.add(path.resolve(chemin));
      return 1;
    }
    if (!info?.isDirectory()) return 0;
    let n = 0;
    for (const entree of (await readdir(chemin)).sort()) n += await ajouter(path.join(chemin, entree), false);
    return n;
  };
  for (const chemin of chemins) {
    let n = 0;
    if (GLOB.test(chemin)) {
      for await (const trouve of glob(chemin)) n += await ajouter(trouve, true);
    } else n = await ajouter(chemin, true);
    if (n > 0) continue;
    if (!GLOB.test(chemin) && !existsSync(chemin))
      throw new ImportError(`chemin introuvable : ${path.resolve(chemin)}`);
    throw new ImportError(`aucun fichier à importer dans ${path.resolve(chemin)} (noms attendus : ${fichiers.source})`);
  }
  return [...out].sort((a, b) => a.localeCompare(b, 'fr', { numeric: true }));
}

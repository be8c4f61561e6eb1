import { mkdir } from 'node:fs/promises';
import { avecBaseDeDonnees, codeDeSortie, lireArguments } from '../domain/import/cli.ts';
import { ImportError } from '../domain/import/source.ts';
import { construireLac, dossierDuLac } from '../domain/jeux/lac.ts';
import { estDisponible, JEUX } from '../domain/jeux/registre.ts';
import { loadConfigOrExit } from '../lib/config.ts';
import { exitWith } from './exit.ts';

/**
 * `npm run lac -- <jeu>… [--larges] [--sandbox]`: builds the lake editions of datasets (one Parquet file each, under
 * DATA_DIR/lac), which agreger_jeu reads with DuckDB while they are fresh (domain/jeux/lac.ts): an edition whose
 * tables have been written since it was built is not used. The editions workflow builds them after each import.
 */

const DISPONIBLES = JEUX.filter(estDisponible);
const USAGE = `Usage : npm run lac -- <jeu>… [--larges] [--sandbox]

Construit l’édition Parquet (le lac) des jeux nommés, que agreger_jeu agrège par DuckDB tant que leurs tables n’ont pas été écrites depuis.

Jeux : ${DISPONIBLES.map((j) => j.nom).join(', ')}

Options :
  --larges    tous les jeux larges (ceux que le lac sert)
  --sandbox   le jeu figé du bac à sable au lieu des données réelles
  -h, --help  cette aide`;

async function main(): Promise<number> {
  const { values, positionals } = lireArguments(
    {
      options: {
        larges: { type: 'boolean', default: false },
        sandbox: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      allowPositionals: true,
    },
    USAGE,
  );
  const inconnus = positionals.filter((p) => !DISPONIBLES.some((j) => j.nom === p));
  if (inconnus.length > 0) throw new ImportError(`jeu inconnu ou indisponible : ${inconnus.join(', ')}.\n\n${USAGE}`);
  const jeux = values.larges ? DISPONIBLES.filter((j) => j.large).map((j) => j.nom) : positionals;
  if (jeux.length === 0) throw new ImportError(`aucun jeu nommé.\n\n${USAGE}`);
  const dossier = dossierDuLac(loadConfigOrExit().DATA_DIR);
  await mkdir(dossier, { recursive: true });
  return avecBaseDeDonnees(async (db) => {
    for (const jeu of jeux) {
      const debut = performance.now();
      const e = await construireLac(db, jeu, dossier, values.sandbox ? 'sandbox' : 'live');
      const duree = ((performance.now() - debut) / 1000).toFixed(1);
      console.log(
        `${jeu} : ${e.lignes} lignes, données du ${e.donnees_du ?? '(sans date)'}, en ${duree} s → ${e.fichier}`,
      );
    }
    return 0;
  });
}

await exitWith(await codeDeSortie(main, 'lac interrompu', (error) => error instanceof ImportError));

import { construireEdition, type Perimetre } from '../domain/exports/construire.ts';
import { EDITIONS, JEUX_EXPORT, JEUX_PRODUITS, type JeuExport } from '../domain/exports/editions.ts';
import { avecBaseDeDonnees, codeDeSortie, lireArguments } from '../domain/import/cli.ts';
import { ImportError } from '../domain/import/source.ts';
import { loadConfigOrExit } from '../lib/config.ts';
import { storageFromConfig } from '../lib/storage.ts';
import { exitWith } from './exit.ts';

/**
 * `npm run export -- <jeu>… [--echantillon] [--tous]`: builds the editions of datasets by hand, as the daily Temporal
 * Schedule and the imports do (workflows/construire-editions.ts): Parquet and csv.gz written by DuckDB, dictionary
 * and quality sheet, volume checked, files stored where the service keeps its files (DATA_DIR/fichiers or the S3
 * bucket), the edition recorded. Prints each edition's outcome; exits 1 when one is held back by its check.
 */

const USAGE = `Usage : npm run export -- <jeu>… [--echantillon] [--tous]

Construit l’édition du jour des jeux nommés (fichiers Parquet et csv.gz, dictionnaire, fiche qualité).

Jeux : ${JEUX_EXPORT.join(', ')}

Options :
  --echantillon  l’édition commune du territoire de démonstration au lieu de celle des contrats
  --tous         tous les jeux produits
  -h, --help     cette aide`;

async function main(): Promise<number> {
  const { values, positionals } = lireArguments(
    {
      options: {
        echantillon: { type: 'boolean', default: false },
        tous: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      allowPositionals: true,
    },
    USAGE,
  );
  const inconnus = positionals.filter((p) => !(JEUX_EXPORT as readonly string[]).includes(p));
  if (inconnus.length > 0) throw new ImportError(`jeu inconnu : ${inconnus.join(', ')}.\n\n${USAGE}`);
  const jeux = values.tous ? JEUX_PRODUITS : (positionals as JeuExport[]);
  if (jeux.length === 0) throw new ImportError(`aucun jeu nommé.\n\n${USAGE}`);
  const perimetre: Perimetre = values.echantillon ? 'echantillon' : 'contrat';
  const storage = storageFromConfig(loadConfigOrExit());
  return avecBaseDeDonnees(async (db) => {
    let retenues = 0;
    for (const jeu of jeux) {
      const declaree = EDITIONS.get(jeu)!;
      if (!declaree.produite) {
        console.log(`${jeu} : non produit — ${declaree.raison}`);
        continue;
      }
      const debut = performance.now();
      const r = await construireEdition({ db, storage, jeu, perimetre, log: (l) => console.log(`  ${l}`) });
      const duree = ((performance.now() - debut) / 1000).toFixed(1);
      console.log(`${jeu} ${r.date} (${perimetre}) : ${r.statut}, ${r.lignes ?? 0} lignes en ${duree} s`);
      for (const f of r.formats) console.log(`  ${f.format} : ${f.taille_octets} octets, sha256 ${f.sha256}`);
      if (r.statut === 'retenue') {
        retenues += 1;
        console.log(`  retenue : ${r.raison}`);
      }
    }
    return retenues > 0 ? 1 : 0;
  });
}

await exitWith(await codeDeSortie(main, 'export interrompu', (error) => error instanceof ImportError));

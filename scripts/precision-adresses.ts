import { adressesDesVentes, mesurerPrecision, type Resultat } from '../domain/adresses/precision.ts';
import { avecBaseDeDonnees, codeDeSortie, lireArguments } from '../domain/import/cli.ts';
import { ImportError } from '../domain/import/source.ts';
import { machine, writeSection } from '../bench/results.ts';
import { exitWith } from './exit.ts';

/**
 * `npm run precision-adresses -- [--sandbox] [--insee CODE] [--limite N] [--publier]`: the measured accuracy of
 * resoudre_adresse. Every street address of the imported DVF sales (their main address), geocoded as DVF writes it,
 * and the share whose first candidate is the street DVF attached the sale to, per street type
 * (domain/adresses/precision.ts says how it is judged). `--publier` writes the sheet to bench/RESULTS.md, section
 * "Geocoder accuracy", with the date and the sample.
 */

const USAGE = `Usage : npm run precision-adresses -- [--sandbox] [--insee CODE] [--limite N] [--publier]

Géocode l'adresse de chaque vente DVF importée, telle que DVF l'écrit, et dit la part dont le premier candidat est
la voie que DVF donne (code FANTOIR, ou distance quand la BAN n'a pas ce code), par type de voie.

Options :
  --sandbox         les ventes et adresses du bac à sable au lieu des données live
  --insee CODE      les ventes d'une commune seulement
  --limite N        N adresses au plus, réparties sur toutes
  --publier         écrit la fiche dans bench/RESULTS.md (section « Geocoder accuracy »)
  -h, --help        cette aide`;

const pct = (n: number, d: number) => (d > 0 ? `${((n / d) * 100).toFixed(2)} %` : '-');

function tableau(r: Resultat): string {
  const lignes = [
    '| type de voie (tel que DVF l’écrit) | adresses | premier candidat sur la bonne voie |',
    '| --- | --- | --- |',
    ...r.parType.map((t) => `| ${t.type} | ${t.adresses} | ${t.justes} (${pct(t.justes, t.adresses)}) |`),
    `| **toutes** | ${r.adresses} | **${r.justes} (${pct(r.justes, r.adresses)})** |`,
    `| dont seule difficulté l’abréviation du type ou le code postal | ${r.simples.adresses} | ${r.simples.justes} (${pct(r.simples.justes, r.simples.adresses)}) |`,
  ];
  return lignes.join('\n');
}

async function main(): Promise<number> {
  const { values } = lireArguments(
    {
      options: {
        sandbox: { type: 'boolean', default: false },
        insee: { type: 'string' },
        limite: { type: 'string' },
        publier: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    },
    USAGE,
  );
  const limite = values.limite === undefined ? null : Number(values.limite);
  if (limite !== null && !(Number.isInteger(limite) && limite > 0)) throw new ImportError('--limite : entier positif');
  const dataset = values.sandbox ? 'sandbox' : 'live';
  return avecBaseDeDonnees(async (db) => {
    let adresses = await adressesDesVentes(db, dataset, values.insee);
    if (adresses.length === 0) throw new ImportError('aucune vente DVF avec une adresse de voie dans ces données.');
    const toutes = adresses.length;
    if (limite !== null && limite < toutes) {
      const pas = toutes / limite;
      adresses = Array.from({ length: limite }, (_, i) => adresses[Math.floor(i * pas)]);
    }
    const tty = process.stderr.isTTY;
    const debut = performance.now();
    const r = await mesurerPrecision(db, dataset, adresses, (n) => {
      if (tty && n % 50 === 0) process.stderr.write(`\r${n} / ${adresses.length}…`);
    });
    if (tty) process.stderr.write('\r\x1b[K');
    const duree = (performance.now() - debut) / 1000;
    const echantillon = `${r.adresses} adresses de voie des ventes DVF importées (${dataset}${values.insee ? `, commune ${values.insee}` : ''}${adresses.length < toutes ? `, une sur ${(toutes / adresses.length).toFixed(1)} de ${toutes}` : ''}), écrites comme DVF les écrit ; ${r.parDistance} jugées à la distance (code FANTOIR absent de la BAN).`;
    console.log(`${echantillon}\n\n${tableau(r)}\n`);
    if (r.manquees.length > 0) {
      console.log('Premières adresses manquées :');
      for (const m of r.manquees.slice(0, 20))
        console.log(`  ${m.q}  →  ${m.obtenu ?? 'rien'}  (attendu : ${m.attendu})`);
    }
    console.log(`\n${(r.adresses / duree).toFixed(0)} adresses/s`);
    if (values.publier) {
      await writeSection(
        'Geocoder accuracy',
        `Machine: ${machine()}. \`npm run precision-adresses\`: ${echantillon}\n\n${tableau(r)}`,
      );
    }
    return 0;
  });
}

await exitWith(await codeDeSortie(main, 'mesure interrompue', (error) => error instanceof ImportError));

import path from 'node:path';
import { reconstruireDerives } from '../marche/derives.ts';
import { transaction, type Db } from '../../db/client.ts';
import { codeInsee, csvRecords, lignesDeDonnees, separateurDe, texte } from '../import/csv.ts';
import { ligneEcriture, upsertParLots, type Lu, type Table } from '../import/ecriture.ts';
import {
  exigerFichier,
  ImportError,
  importSource,
  nouveauRapport,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';
import { zoneAbcDe, ZONES_ABC } from './zone.ts';

/**
 * Importer of the A/B/C housing zoning: the national list of communes with their zone (`CODGEO;REG;DEP;LIBGEO;Zone en
 * vigueur depuis le 5 juillet 2024;Reclassement juillet 2024`), published in Windows-1252 (copies circulate in
 * UTF-8: the charset is told from the bytes), `;`, CRLF.
 *
 * Each edition names its zone column after its date ("Zone en vigueur depuis le 5 juillet 2024", "Zonage en vigueur
 * depuis le 5 septembre 2025"…), so the column is found by pattern: the one whose name has the word `zone` or `zonage`
 * (and not `reclassement`), the one that also says `vigueur` when several do. The edition's date is read in that name
 * (`5 juillet 2024`, `1er octobre 2023`, `05/07/2024`, `2024-07-05`; a month and year alone give the 1st of the month),
 * else in the file's name (`zonage-abc-juillet-2024.csv`); a file that says no date is refused. The code column is
 * `CODGEO` (or `INSEE`, `code_insee`, `code_commune`), zero-padded if it lost its leading zero; zones are read
 * whatever their spelling (`A bis`, `ABIS`, `b1`…), an unknown one rejects its row.
 *
 * An import replaces its edition (rows upserted when they changed, communes the file no longer lists deleted) in one
 * transaction; the editions of other dates are kept, and the read serves the latest. Importing the same file again
 * changes nothing.
 */

const LOT = 1000;
// Two imports of the zoning into one dataset wait for each other.
const VERROU = 726_354_020;

const TABLE: Table = {
  nom: 'zonage_abc',
  colonnes: [
    ['dataset', 'text'],
    ['insee', 'text'],
    ['en_vigueur_le', 'date'],
    ['zone', 'text'],
    ['commune', 'text'],
    ['reclassement', 'boolean'],
  ],
  cle: ['dataset', 'insee', 'en_vigueur_le'],
};

/** Lower case, without accents, words separated by single spaces. */
function mots(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9/]+/g, ' ')
    .trim();
}

const CODES = new Set(['codgeo', 'insee', 'code insee', 'code commune', 'insee com', 'depcom', 'codecommune']);
const NOMS = new Set(['libgeo', 'nom commune', 'libelle', 'commune', 'nom']);

const MOIS = [
  'janvier',
  'fevrier',
  'mars',
  'avril',
  'mai',
  'juin',
  'juillet',
  'aout',
  'septembre',
  'octobre',
  'novembre',
  'decembre',
];
const DATE_EN_LETTRES = new RegExp(`(?:\\b(\\d{1,2})(?:er)? )?\\b(${MOIS.join('|')}) (\\d{4})\\b`);

/** The date a text says (rule in the comment at the top) as AAAA-MM-JJ, or null. */
export function dateDe(text: string): string | null {
  const t = mots(text);
  let j: number, m: number, a: number;
  let match = DATE_EN_LETTRES.exec(t);
  if (match) [j, m, a] = [match[1] ? Number(match[1]) : 1, MOIS.indexOf(match[2]) + 1, Number(match[3])];
  else if ((match = /\b(\d{1,2})\/(\d{1,2})\/(\d{4})\b/.exec(t))) [j, m, a] = match.slice(1).map(Number);
  else if ((match = /\b(\d{4}) (\d{2}) (\d{2})\b/.exec(t))) [a, m, j] = match.slice(1).map(Number);
  else return null;
  const iso = `${a}-${String(m).padStart(2, '0')}-${String(j).padStart(2, '0')}`;
  const date = new Date(`${iso}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(iso) ? iso : null;
}

interface Colonnes {
  code: number;
  nom: number | null;
  zone: number;
  reclassement: number | null;
}

/** The columns of a header, or why it is not the zoning's. */
function colonnesDe(entete: string[]): Colonnes | string {
  const noms = entete.map(mots);
  const code = noms.findIndex((n) => CODES.has(n));
  if (code < 0) return 'colonne du code commune (CODGEO) absente';
  let zones = noms.flatMap((n, i) => (/\bzon(e|age)\b/.test(n) && !n.includes('reclassement') ? [i] : []));
  if (zones.length > 1) zones = zones.filter((i) => noms[i].includes('vigueur'));
  if (zones.length !== 1) {
    return zones.length === 0
      ? 'colonne de la zone absente (un nom qui dit « zone » ou « zonage », ex. « Zone en vigueur depuis le 5 juillet 2024 »)'
      : `plusieurs colonnes de zone en vigueur (${zones.map((i) => entete[i]).join(', ')})`;
  }
  const nom = noms.findIndex((n) => NOMS.has(n));
  const reclassement = noms.findIndex((n) => n.includes('reclassement'));
  return { code, nom: nom < 0 ? null : nom, zone: zones[0], reclassement: reclassement < 0 ? null : reclassement };
}

/** Oui / Non as the file writes it; null when empty or anything else. */
function ouiNon(valeur: string | null): boolean | null {
  const v = valeur === null ? '' : mots(valeur);
  if (['oui', 'o', 'vrai', 'true', '1'].includes(v)) return true;
  if (['non', 'n', 'faux', 'false', '0'].includes(v)) return false;
  return null;
}

/** Imports a national A/B/C zoning file into `dataset`, replacing its edition. */
export async function importZonageAbc(db: Db, file: string, options: DatasetImportOptions = {}): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  await exigerFichier(file);
  const { report, rejeter } = nouveauRapport(file);
  await using records = csvRecords(file, separateurDe, { encodage: 'auto' });
  const premiere = await records.next();
  if (premiere.done) throw new ImportError(`${file} est vide : en-tête du zonage A/B/C attendu.`);
  const entete = premiere.value.champs;
  const colonnes = colonnesDe(entete);
  if (typeof colonnes === 'string') {
    throw new ImportError(
      `${file} : en-tête non reconnu comme celui du zonage A/B/C : ${colonnes}. En-tête lu : ${entete.join(';').slice(0, 200)}`,
    );
  }
  const colonneZone = entete[colonnes.zone].trim();
  const enVigueurLe = dateDe(colonneZone) ?? dateDe(path.basename(file));
  if (enVigueurLe === null) {
    throw new ImportError(
      `${file} : date d’entrée en vigueur introuvable, ni dans le nom de la colonne de zone (« ${colonneZone} ») ni dans celui du fichier ; renommez le fichier avec elle (zonage-abc-5-juillet-2024.csv).`,
    );
  }
  const lignes = new Map<string, number>();
  let reclassees = 0;
  const parZone = new Map<string, number>();
  const ecriture = await transaction(db, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [VERROU, dataset]);
    const lots = upsertParLots<Lu>(client, {
      table: TABLE,
      taille: LOT,
      cle: (l) => l.row.insee as string,
      report,
      rejeter,
      onProgress: options.onProgress,
    });
    for await (const { ligne, champs } of lignesDeDonnees(records, entete.length, report, rejeter)) {
      const brut = texte(champs[colonnes.code]);
      const insee = codeInsee(brut);
      if (insee === null) {
        rejeter(ligne, `code commune absent ou invalide (${brut ?? 'vide'})`);
        continue;
      }
      const valeur = texte(champs[colonnes.zone]);
      const zone = valeur === null ? null : zoneAbcDe(valeur);
      if (zone === null) {
        rejeter(
          ligne,
          `zone ${valeur === null ? 'absente' : `« ${valeur} » inconnue`} (attendues : ${ZONES_ABC.join(', ')})`,
        );
        continue;
      }
      const avant = lignes.get(insee);
      if (avant !== undefined) {
        rejeter(ligne, `commune ${insee} déjà lue ligne ${avant}`);
        continue;
      }
      lignes.set(insee, ligne);
      const reclassement = colonnes.reclassement === null ? null : ouiNon(texte(champs[colonnes.reclassement]));
      if (reclassement) reclassees++;
      parZone.set(zone, (parZone.get(zone) ?? 0) + 1);
      await lots.garder({
        ligne,
        row: {
          dataset,
          insee,
          en_vigueur_le: enVigueurLe,
          zone,
          commune: colonnes.nom === null ? null : texte(champs[colonnes.nom]),
          reclassement,
        },
      });
    }
    const e = await lots.terminer();
    // A file none of whose rows could be read would empty its edition: more likely a wrong file than a repeal.
    if (lignes.size === 0) {
      throw new ImportError(`${file} : aucune commune lisible (${report.lus} lignes lues) ; rien n’est importé.`);
    }
    const { rowCount } = await client.query(
      `DELETE FROM zonage_abc WHERE dataset = $1 AND en_vigueur_le = $2 AND NOT (insee = ANY ($3::text[]))`,
      [dataset, enVigueurLe, [...lignes.keys()]],
    );
    return { ...e, retirees: rowCount ?? 0 };
  });
  report.details.push(
    `édition : en vigueur depuis le ${enVigueurLe} (colonne « ${colonneZone} »)`,
    `${ligneEcriture('communes', report.gardes, ecriture)}, ${ecriture.retirees} retirées`,
    `par zone : ${ZONES_ABC.map((z) => `${z} ${parZone.get(z) ?? 0}`).join(', ')}`,
    ...(colonnes.reclassement === null ? [] : [`reclassées par cette édition : ${reclassees}`]),
  );
  // The pinel-a ranking of the Communes market reads the zones (domain/marche/derives.ts).
  await reconstruireDerives(db, dataset);
  return report;
}

/** The `zonage-abc` source of the importers' CLI. */
export const zonageAbcSource = importSource(
  'zonage-abc',
  'zonage A/B/C des communes : liste nationale CSV (CODGEO;…;Zone en vigueur depuis le …), Windows-1252 ou UTF-8 ; une édition par date d’entrée en vigueur',
  importZonageAbc,
);

import { transaction, type Db } from '../../db/client.ts';
import { departementOf } from '../communes.ts';
import { codeInsee, csvRecords, dateIso, lignesDeDonnees, separateurDe, texte } from '../import/csv.ts';
import { ligneEcriture, upsertParLots, type Lu, type Table } from '../import/ecriture.ts';
import {
  exigerFichier,
  ImportError,
  importSource,
  nouveauRapport,
  type DatasetImportOptions,
  type ImportReport,
} from '../import/source.ts';

/**
 * Importer of the planning status of communes: the table of communes and the planning document in force in each
 * (the national rules, RNU; a communal map, CC; a PLU, a PLUi, a POS, a PSMV), as the ministry publishes it (the
 * "document d'urbanisme en vigueur" table of the GPU and of Sudocuh). Its layout changes with its editions and
 * publishers, so this is the format read, by column name (case, accents, spaces and punctuation ignored):
 *
 * - the commune's INSEE code (required): `insee`, `code_insee`, `codgeo`, `code commune`, `com`, `depcom`,
 *   `insee_com`, `code_commune`; zero-padded when a spreadsheet dropped its leading zero (`1001` is 01001);
 * - the document in force (required): `type_document`, `typedoc`, `type du document`, `document`,
 *   `document en vigueur`, `doc_en_vigueur`, `du_en_vigueur`, `type_du`; values RNU, CC, PLU, PLUi, POS, PSMV, or
 *   their names (« Carte communale », « Plan local d'urbanisme intercommunal », « PLUi-H », « PLUM », « POS caduc »
 *   is RNU, « Règlement national d'urbanisme »...); an unknown value rejects its row with the value said;
 * - optional: the state (`etat`, `état du document`, `statut`), the approval date (`date_approbation`, `datappro`,
 *   `date d'approbation`, `approuve_le`: AAAA-MM-JJ, JJ/MM/AAAA or AAAAMMJJ), the document's IDURBA (`idurba`),
 *   whether it is published on the Géoportail (`publie_gpu`, `gpu`, `publication gpu`: oui/non, 1/0, true/false),
 *   the commune's name (`nom_commune`, `libgeo`, `commune`, `nom`).
 *
 * `;`, `,` or tab, UTF-8 or Windows-1252 (told by the bytes), a header line first. A commune listed twice keeps its
 * first row. An import replaces, for the départements the file has, the rows of their communes (upserts of what
 * changed, communes the file no longer lists deleted): a national file replaces the table, a départemental one its
 * département. Importing the same file again changes nothing. Read by `situationUrbanisme` (statut-communes.ts).
 */

const LOT = 1000;
const VERROU = 726_354_036;

const TABLE: Table = {
  nom: 'communes_urbanisme',
  colonnes: [
    ['dataset', 'text'],
    ['insee', 'text'],
    ['commune', 'text'],
    ['type_document', 'text'],
    ['etat', 'text'],
    ['approuve_le', 'date'],
    ['idurba', 'text'],
    ['publie_gpu', 'boolean'],
  ],
  cle: ['dataset', 'insee'],
  horodatage: 'maj_le',
};

/** Lower case, without accents, words separated by single spaces. */
function mots(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
}

const NOMS: Record<string, string[]> = {
  insee: [
    'insee',
    'code insee',
    'codgeo',
    'code commune',
    'com',
    'depcom',
    'insee com',
    'code insee commune',
    'inseecom',
  ],
  type: [
    'type document',
    'typedoc',
    'type du document',
    'document',
    'document en vigueur',
    'doc en vigueur',
    'du en vigueur',
    'type du',
    'type de document',
    'type document en vigueur',
    'document d urbanisme',
    'document urbanisme en vigueur',
  ],
  etat: ['etat', 'etat du document', 'etat document', 'statut', 'statut du document'],
  date: [
    'date approbation',
    'datappro',
    'date d approbation',
    'approuve le',
    'date appro',
    'date approbation du document',
  ],
  idurba: ['idurba'],
  gpu: ['publie gpu', 'gpu', 'publication gpu', 'publie sur le gpu', 'statut gpu', 'en ligne gpu', 'publie'],
  nom: ['nom commune', 'libgeo', 'commune', 'nom', 'nom de la commune', 'libelle commune'],
};

type Colonne = keyof typeof NOMS;

/** The document type a table writes, as the CNIG spells it; null when unknown. */
export function typeDocumentDe(valeur: string): 'RNU' | 'CC' | 'PLU' | 'PLUi' | 'POS' | 'PSMV' | null {
  const v = mots(valeur);
  const compact = v.replace(/ /g, '');
  if (/\bcaduc/.test(v) || compact === 'rnu' || /reglement national/.test(v)) return 'RNU';
  if (compact === 'cc' || /carte communale/.test(v)) return 'CC';
  if (/^plui/.test(compact) || compact === 'plum' || /intercommunal|metropolitain/.test(v)) return 'PLUi';
  if (compact === 'plu' || /plan local d urbanisme/.test(v)) return 'PLU';
  if (compact === 'pos' || /plan d occupation/.test(v)) return 'POS';
  if (compact === 'psmv' || /sauvegarde et de mise en valeur/.test(v)) return 'PSMV';
  return null;
}

function ouiNon(valeur: string | null): boolean | null {
  const v = valeur === null ? '' : mots(valeur);
  if (['oui', 'o', 'vrai', 'true', '1', 'publie', 'en ligne'].includes(v)) return true;
  if (['non', 'n', 'faux', 'false', '0', 'non publie'].includes(v)) return false;
  return null;
}

/** Imports a table of the communes' planning documents into `dataset` (format in the comment at the top). */
export async function importStatutCommunes(
  db: Db,
  file: string,
  options: DatasetImportOptions = {},
): Promise<ImportReport> {
  const dataset = options.dataset ?? 'live';
  await exigerFichier(file);
  const { report, rejeter } = nouveauRapport(file);
  await using records = csvRecords(file, separateurDe, { encodage: 'auto' });
  const premiere = await records.next();
  if (premiere.done) throw new ImportError(`${file} est vide : en-tête de la table des communes attendu.`);
  const entete = premiere.value.champs;
  const noms = entete.map(mots);
  const index = Object.fromEntries(
    Object.entries(NOMS).map(([c, variantes]) => [c, noms.findIndex((n) => variantes.includes(n))]),
  ) as Record<Colonne, number>;
  if (index.insee < 0 || index.type < 0) {
    throw new ImportError(
      `${file} : colonne ${index.insee < 0 ? 'du code INSEE (insee, code_insee, codgeo…)' : 'du document en vigueur (type_document, typedoc, document…)'} introuvable. En-tête lu : ${entete.join(';').slice(0, 200)}`,
    );
  }
  const champ = (champs: string[], c: Colonne) => (index[c] < 0 ? null : texte(champs[index[c]]));
  const lignes = new Map<string, number>();
  const parType = new Map<string, number>();
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
      const brut = champ(champs, 'insee');
      const insee = codeInsee(brut);
      if (insee === null) {
        rejeter(ligne, `code INSEE absent ou invalide (${brut ?? 'vide'})`);
        continue;
      }
      const valeur = champ(champs, 'type');
      const type = valeur === null ? null : typeDocumentDe(valeur);
      if (type === null) {
        rejeter(
          ligne,
          `document en vigueur ${valeur === null ? 'absent' : `« ${valeur} » inconnu`} (attendus : RNU, CC, PLU, PLUi, POS, PSMV)`,
        );
        continue;
      }
      const avant = lignes.get(insee);
      if (avant !== undefined) {
        rejeter(ligne, `commune ${insee} déjà lue ligne ${avant}`);
        continue;
      }
      const date = dateIso(champ(champs, 'date'));
      if (date === undefined) {
        rejeter(ligne, `date d’approbation illisible (${champ(champs, 'date')})`);
        continue;
      }
      lignes.set(insee, ligne);
      parType.set(type, (parType.get(type) ?? 0) + 1);
      await lots.garder({
        ligne,
        row: {
          dataset,
          insee,
          commune: champ(champs, 'nom'),
          type_document: type,
          etat: champ(champs, 'etat'),
          approuve_le: date,
          idurba: champ(champs, 'idurba'),
          publie_gpu: ouiNon(champ(champs, 'gpu')),
        },
      });
    }
    const e = await lots.terminer();
    if (lignes.size === 0) {
      throw new ImportError(`${file} : aucune commune lisible (${report.lus} lignes lues) ; rien n’est importé.`);
    }
    const departements = [...new Set([...lignes.keys()].map(departementOf))];
    const { rowCount } = await client.query(
      `DELETE FROM communes_urbanisme
        WHERE dataset = $1 AND NOT (insee = ANY ($2::text[]))
          AND (CASE WHEN insee LIKE '97%' THEN left(insee, 3) ELSE left(insee, 2) END) = ANY ($3::text[])`,
      [dataset, [...lignes.keys()], departements],
    );
    return { ...e, retirees: rowCount ?? 0 };
  });
  report.details.push(
    `${ligneEcriture('communes', report.gardes, ecriture)}, ${ecriture.retirees} retirées`,
    `par document en vigueur : ${['RNU', 'CC', 'PLU', 'PLUi', 'POS', 'PSMV'].map((t) => `${t} ${parType.get(t) ?? 0}`).join(', ')}`,
  );
  return report;
}

/** The `urbanisme-communes` source of the importers' CLI. */
export const statutCommunesSource = importSource(
  'urbanisme-communes',
  'document d’urbanisme en vigueur par commune (RNU, CC, PLU, PLUi, POS, PSMV) : table CSV (insee;type_document;etat;date_approbation;…)',
  importStatutCommunes,
);

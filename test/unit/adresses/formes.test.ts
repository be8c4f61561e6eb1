import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importBan } from '../../../domain/adresses/import-ban.ts';
import { normaliserNom } from '../../../domain/adresses/normaliser.ts';
import { rechercher } from '../../../domain/adresses/resoudre.ts';
import { createTestDb } from '../../support/db.ts';

/**
 * Addresses as DVF, the cadastre and people write them, against streets of Paris that share a name across types and
 * arrondissements: the misses of a geocoder that read `BD DE CHARONNE` as Rue de Charonne and let `75015` go.
 */

// [arrondissement, street code, name, numbers (`27b` is 27 bis), afnor name when the BAN abbreviates it]
const VOIES: Array<[string, string, string, string[], string?]> = [
  ['75111', '1887', 'Rue de Charonne', ['25', '27', '29']],
  ['75111', '1888', 'Boulevard de Charonne', ['25', '27', '27b', '29']],
  ['75111', '4371', 'Rue Guénot', ['1', '3', '5']],
  ['75111', '4370', 'Passage Guénot', ['1', '3']],
  ['75111', '9890', 'Boulevard Voltaire', ['10', '12']],
  ['75111', '9892', 'Cité Voltaire', ['10', '12']],
  ['75111', '8260', 'Boulevard Richard Lenoir', ['40', '42']],
  ['75111', '8261', 'Rue Richard Lenoir', ['40', '42']],
  ['75111', '3424', 'Rue du Faubourg Saint-Antoine', ['10', '12'], 'RUE DU FBG ST ANTOINE'],
  ['75112', '0716', 'Boulevard de la Bastille', ['4', '6']],
  ['75112', '0717', 'Place de la Bastille', ['4', '6']],
  ['75112', '8124', 'Boulevard de Reuilly', ['8', '10']],
  ['75112', '8125', 'Rue de Reuilly', ['8', '10']],
  ['75113', '7405', 'Rue Pinel', ['5', '7']],
  ['75113', '7404', 'Place Pinel', ['5', '7']],
  ['75115', '4426', 'Rue du Hameau', ['4', '6']],
  ['75107', '9660', 'Rue Vaneau', ['4', '6']],
  ['75109', '0455', "Rue d'Aumale", ['12', '14']],
  ['75119', '3297', "Rue de l'Équerre", ['7', '9']],
  ['75104', '4586', 'Quai Henri IV', ['2', '4']],
  ['75104', '8678', "Rue Saint-Louis en l'Île", ['30', '32']],
  ['75104', '4659', 'Rue des Hospitalières Saint-Gervais', ['6', '8'], 'RUE DES HOSPITALIERES ST GERVAIS'],
  ['75116', '0204', 'Rue Albert Premier', ['3']],
];

const CP: Record<string, string> = {
  '75104': '75004',
  '75107': '75007',
  '75109': '75009',
  '75111': '75011',
  '75112': '75012',
  '75113': '75013',
  '75115': '75015',
  '75116': '75016',
  '75119': '75019',
};

function ban(): string {
  const lignes = ['id;id_fantoir;numero;rep;nom_voie;code_postal;code_insee;nom_commune;lon;lat;nom_afnor'];
  VOIES.forEach(([insee, code, nom, numeros, afnor], v) => {
    numeros.forEach((n, i) => {
      const numero = Number.parseInt(n, 10);
      const rep = n.endsWith('b') ? 'bis' : '';
      const arrondissement = Number(insee.slice(3));
      lignes.push(
        [
          `${insee}_${code}_${String(numero).padStart(5, '0')}${rep ? '_bis' : ''}`,
          `${insee}_${code}`,
          numero,
          rep,
          nom,
          CP[insee],
          insee,
          `Paris ${arrondissement}e Arrondissement`,
          (2.3 + v * 0.001).toFixed(6),
          (48.85 + i * 0.0001).toFixed(6),
          afnor ?? nom.normalize('NFD').replace(/\p{M}/gu, '').toUpperCase().replace(/['-]/g, ' '),
        ].join(';'),
      );
    });
  });
  return `${lignes.join('\n')}\n`;
}

let db: Db;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'formes-'));
  const file = path.join(dir, 'adresses-75.csv');
  await writeFile(file, ban());
  expect((await importBan(db, file)).rejetes).toEqual([]);
});
afterAll(async () => {
  await drop?.();
  await rm(dir, { recursive: true, force: true });
});

const premier = async (q: string, codePostal: string | null = null) =>
  (await rechercher(db, 'live', q, codePostal, 5))[0];

describe('resoudre_adresse reads addresses as DVF and people write them', () => {
  it('keeps the street type: a Boulevard is not a Rue, a Passage, a Place, a Cité are not either', async () => {
    const cas: Array<[string, string]> = [
      ['27 BD DE CHARONNE 75011 Paris 11e Arrondissement', '75111_1888_00027'],
      ['27 RUE DE CHARONNE 75011 Paris 11e Arrondissement', '75111_1887_00027'],
      ['27 boulevard de charonne paris', '75111_1888_00027'],
      ['27 BLD DE CHARONNE PARIS 11', '75111_1888_00027'],
      ['3 PAS GUENOT 75011', '75111_4370_00003'],
      ['3 RUE GUENOT 75011', '75111_4371_00003'],
      ['12 BD VOLTAIRE 75011', '75111_9890_00012'],
      ['12 CITE VOLTAIRE 75011', '75111_9892_00012'],
      ['40 BD RICHARD LENOIR 75011', '75111_8260_00040'],
      ['4 BD DE LA BASTILLE 75012', '75112_0716_00004'],
      ['4 PL DE LA BASTILLE 75012', '75112_0717_00004'],
      ['8 BD DE REUILLY 75012', '75112_8124_00008'],
      ['5 PL PINEL 75013', '75113_7404_00005'],
      ['5 R PINEL 75013', '75113_7405_00005'],
    ];
    for (const [q, cle] of cas) expect((await premier(q))?.cle_ban, q).toBe(cle);
  });

  it('reads repetition indices as DVF writes them (B, T) and as people do (bis, 27B)', async () => {
    for (const q of ['27 B BD DE CHARONNE 75011', '27B BD DE CHARONNE 75011', '27 bis boulevard de charonne paris'])
      expect((await premier(q))?.cle_ban, q).toBe('75111_1888_00027_bis');
  });

  it('binds the search to the commune of the postal or INSEE code given, other communes coming only after, lower', async () => {
    expect((await premier('4 RUE DU HAMEAU 75015'))?.cle_ban).toBe('75115_4426_00004');
    expect((await premier('4 RUE DU HAMEAU 75115'))?.cle_ban).toBe('75115_4426_00004');
    expect((await premier('27 BD DE CHARONNE 75111'))?.cle_ban).toBe('75111_1888_00027');
    // No Rue Vaneau in the 15e: the one of the 7e, marked by a lower score than with its own postal code.
    const ailleurs = await premier('4 RUE VANEAU 75015');
    const chezElle = await premier('4 RUE VANEAU 75007');
    expect(ailleurs?.cle_ban).toBe('75107_9660_00004');
    expect(chezElle?.cle_ban).toBe('75107_9660_00004');
    expect(ailleurs!.score!).toBeLessThanOrEqual(chezElle!.score! * 0.8);
    // The code_postal parameter filters: nothing outside its communes.
    expect(await rechercher(db, 'live', '4 rue vaneau', '75015', 5)).toEqual(
      expect.not.arrayContaining([expect.objectContaining({ insee: '75107' })]),
    );
  });

  it('reads elisions without apostrophe, saints, abbreviated and cut words, ordinals and Roman numerals', async () => {
    const cas: Array<[string, string]> = [
      ['12 RUE D AUMALE 75009', '75109_0455_00012'],
      ['12 rue daumale paris', '75109_0455_00012'],
      ['7 RUE DE L EQUERRE 75019', '75119_3297_00007'],
      ['30 RUE ST LOUIS EN L ILE 75004', '75104_8678_00030'],
      ['30 rue saint-louis-en-l’île paris 4e', '75104_8678_00030'],
      ['10 RUE DU FBG ST ANTOINE 75011', '75111_3424_00010'],
      ['10 rue du faubourg saint antoine paris', '75111_3424_00010'],
      ['6 RUE DES HOSPIT ST GERVAIS 75004', '75104_4659_00006'],
      ['2 QUAI HENRI IV 75004', '75104_4586_00002'],
      ['2 quai henri 4 paris', '75104_4586_00002'],
      ['3 RUE ALBERT 1ER 75016', '75116_0204_00003'],
      ['3 RUE ALBERT IER 75016', '75116_0204_00003'],
    ];
    for (const [q, cle] of cas) expect((await premier(q))?.cle_ban, q).toBe(cle);
  });

  it('normalises a name the same way at import and at query time', () => {
    expect(normaliserNom('BD DE CHARONNE')).toEqual(normaliserNom('Boulevard de Charonne'));
    expect(normaliserNom('RUE DES HOSPITALIERES ST GERVAIS')).toEqual(
      normaliserNom('Rue des Hospitalières Saint-Gervais'),
    );
    expect(normaliserNom('BD ALBERT IER')).toEqual(normaliserNom('Boulevard Albert 1er'));
    expect(normaliserNom('Bd Albert Premier')).toEqual(normaliserNom('Boulevard Albert 1er'));
    expect(normaliserNom('QUAI HENRI IV')).toEqual({ type: 'quai', mots: ['henri', '4'] });
    expect(normaliserNom('Grande Rue')).toEqual({ type: 'grande rue', mots: [] });
    expect(normaliserNom('Chemin de la Vie')).toEqual({ type: 'chemin', mots: ['de', 'la', 'vie'] });
    expect(normaliserNom('Mélac')).toEqual({ type: null, mots: ['melac'] });
    for (const [abrege, type] of [
      ['BD', 'boulevard'],
      ['BLD', 'boulevard'],
      ['AV', 'avenue'],
      ['R', 'rue'],
      ['PL', 'place'],
      ['PAS', 'passage'],
      ['IMP', 'impasse'],
      ['VLA', 'villa'],
      ['CITE', 'cite'],
      ['SQ', 'square'],
      ['QU', 'quai'],
      ['QUAI', 'quai'],
      ['ALL', 'allee'],
      ['CHE', 'chemin'],
      ['CHEM', 'chemin'],
      ['RTE', 'route'],
      ['FG', 'faubourg'],
      ['FBG', 'faubourg'],
      ['CRS', 'cours'],
      ['RPT', 'rond point'],
      ['SEN', 'sente'],
      ['SENT', 'sentier'],
      ['HAM', 'hameau'],
      ['LD', 'lieu dit'],
      ['ZA', 'zone artisanale'],
      ['ZI', 'zone industrielle'],
      ['RES', 'residence'],
      ['PRV', 'parvis'],
      ['MTE', 'montee'],
    ])
      expect(normaliserNom(`${abrege} DES LILAS`), abrege).toEqual({ type, mots: ['des', 'lilas'] });
  });
});

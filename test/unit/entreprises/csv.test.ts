import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  csvRecords,
  dateIso,
  lignesDeDonnees,
  separateurDe,
  splitCsvLine,
  type CsvRecord,
} from '../../../domain/import/csv.ts';
import { nouveauRapport } from '../../../domain/import/source.ts';
import { numeroDeclare, voieNormalisee } from '../../../domain/entreprises/rattachement.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'csv-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

async function records(contenu: string | Buffer, nom = 'f.csv', encodage: 'utf-8' | 'auto' = 'utf-8') {
  const file = path.join(dir, nom);
  await writeFile(file, contenu);
  const out: CsvRecord[] = [];
  for await (const r of csvRecords(file, separateurDe, { encodage })) out.push(r);
  return out;
}

describe('CSV records', () => {
  it('keeps quoted separators, doubled quotes and line breaks inside a field, with the line each record starts on', async () => {
    const out = await records('\uFEFFa;b;c\r\n1;"x;y";"dit ""oui"""\r\n2;"sur\ndeux lignes";z\n3;;\n');
    expect(out).toEqual([
      { ligne: 1, champs: ['a', 'b', 'c'] },
      { ligne: 2, champs: ['1', 'x;y', 'dit "oui"'] },
      { ligne: 3, champs: ['2', 'sur\ndeux lignes', 'z'] },
      { ligne: 5, champs: ['3', '', ''] },
    ]);
  });

  it('reads gzipped files and guesses the separator from the header', async () => {
    const out = await records(gzipSync('siren,nic\n123,45\n'), 'f.csv.gz');
    expect(out.map((r) => r.champs)).toEqual([
      ['siren', 'nic'],
      ['123', '45'],
    ]);
  });

  it('keeps a quote inside an unquoted field as it is', async () => {
    expect(splitCsvLine('a;"b;c";"d ""e""";')).toEqual(['a', 'b;c', 'd "e"', '']);
    const out = await records('a;b\n1;12 "LES PINS\n2;ok\n');
    expect(out.map((r) => r.champs)).toEqual([
      ['a', 'b'],
      ['1', '12 "LES PINS'],
      ['2', 'ok'],
    ]);
  });

  it('does not let a quote that never closes swallow the rest of the file', async () => {
    const long = 'x'.repeat(1000);
    const lignes = ['a;b', '1;"12 LES PINS', ...Array.from({ length: 1100 }, (_, i) => `${i + 2};${long}`)];
    const out = await records(lignes.join('\n'));
    expect(out).toHaveLength(1102);
    expect(out[1]).toEqual({ ligne: 2, champs: ['1', '12 LES PINS'], guillemetOuvert: true });
    expect(out[1101]).toEqual({ ligne: 1102, champs: ['1101', long] });
    const fin = await records('a;b\n1;"ouvert\n2;x\n');
    expect(fin.map((r) => r.ligne)).toEqual([1, 2, 3]);
  });

  it('tells UTF-8 from Windows-1252 by the bytes when asked, an accent cut between two chunks included', async () => {
    // Chunks are 1 MiB: the first accent's two UTF-8 bytes fall on either side of the first boundary.
    const avant = `co;nom\n${'1;x\n'.repeat(262_141)}2;Cl`;
    expect(Buffer.byteLength(avant)).toBe((1 << 20) - 1);
    const texte = `${avant}émenciat\n3;Chèvrerie €\n`;
    for (const [nom, octets] of [
      ['utf8.csv', Buffer.from(texte, 'utf8')],
      [
        'cp1252.csv',
        Buffer.concat([Buffer.from(texte.replace(' €\n', ''), 'latin1'), Buffer.from([0x20, 0x80, 0x0a])]),
      ],
    ] as const) {
      const out = await records(octets, nom, 'auto');
      expect(
        out.slice(-2).map((r) => r.champs),
        nom,
      ).toEqual([
        ['2', 'Clémenciat'],
        ['3', 'Chèvrerie €'],
      ]);
    }
    // A file whose only accent ends it, in either charset.
    expect((await records(Buffer.from('a;b\n1;é', 'latin1'), 'fin-cp1252.csv', 'auto'))[1].champs).toEqual(['1', 'é']);
    expect((await records(Buffer.from('a;b\n1;é', 'utf8'), 'fin-utf8.csv', 'auto'))[1].champs).toEqual(['1', 'é']);
    // Unless asked, UTF-8: Windows-1252 accents become U+FFFD.
    expect((await records(Buffer.from('a;b\n1;é\n', 'latin1'), 'defaut.csv'))[1].champs).toEqual(['1', '\uFFFD']);
  });

  it('gives an importer the data rows: blank lines skipped, unreadable ones rejected with why', async () => {
    const file = path.join(dir, 'donnees.csv');
    await writeFile(file, 'a;b\n1;x\n\n2;y;z\n3;"ouvert\n');
    const { report, rejeter } = nouveauRapport(file);
    const lus: CsvRecord[] = [];
    await using enregistrements = csvRecords(file, ';');
    await enregistrements.next();
    for await (const r of lignesDeDonnees(enregistrements, 2, report, rejeter)) lus.push(r);
    expect(lus).toEqual([{ ligne: 2, champs: ['1', 'x'] }]);
    expect(report.lus).toBe(3);
    expect(report.rejetes).toEqual([
      { ligne: 4, motif: '3 colonnes au lieu de 2' },
      { ligne: 5, motif: 'guillemet non refermé : enregistrement illisible' },
    ]);
  });
});

describe('values and addresses', () => {
  it('reads dates in the formats of the sources and refuses impossible ones', () => {
    expect(dateIso('2023-05-10')).toBe('2023-05-10');
    expect(dateIso('2018-07-10T14:17:15')).toBe('2018-07-10');
    expect(dateIso('10/05/2023')).toBe('2023-05-10');
    expect(dateIso('20230510')).toBe('2023-05-10');
    expect(dateIso('')).toBeNull();
    expect(dateIso('2023-02-30')).toBeUndefined();
    expect(dateIso('mai 2023')).toBeUndefined();
  });

  it('folds street names and numbers as the sources write them', () => {
    expect(voieNormalisee('R DU GAL DE GAULLE')).toEqual(voieNormalisee('Rue du Général de Gaulle'));
    expect(voieNormalisee('AV AV DE LA LIBERATION').complete).toBe('avenue liberation');
    expect(voieNormalisee('Avenue de la Libération').distinctive).toBe('liberation');
    expect(numeroDeclare('12')).toEqual({ n: 12, suffixe: null });
    expect(numeroDeclare('12B')).toEqual({ n: 12, suffixe: 'bis' });
    expect(numeroDeclare('12 TER')).toEqual({ n: 12, suffixe: 'ter' });
    expect(numeroDeclare('48-50')).toEqual({ n: 48, suffixe: null });
    expect(numeroDeclare('3', 'B')).toEqual({ n: 3, suffixe: 'bis' });
    expect(numeroDeclare('LIEU-DIT')).toBeNull();
  });
});

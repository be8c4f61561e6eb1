import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvRecords, dateIso, separateurDe } from '../../../domain/entreprises/import-commun.ts';
import { numeroDeclare, voieNormalisee } from '../../../domain/entreprises/rattachement.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'csv-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

async function records(contenu: string | Buffer, nom = 'f.csv') {
  const file = path.join(dir, nom);
  await writeFile(file, contenu);
  const out: Array<{ ligne: number; champs: string[] }> = [];
  for await (const r of csvRecords(file, separateurDe)) out.push(r);
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

  it('does not let a stray quote swallow the rest of the file', async () => {
    const lignes = ['a;b', '1;12 "LES PINS', ...Array.from({ length: 600 }, (_, i) => `${i + 2};ok`)];
    const out = await records(lignes.join('\n'));
    expect(out).toHaveLength(602);
    expect(out[1]).toEqual({ ligne: 2, champs: ['1', '12 LES PINS'] });
    expect(out[601]).toEqual({ ligne: 602, champs: ['601', 'ok'] });
    const fin = await records('a;b\n1;"ouvert\n2;x\n');
    expect(fin.map((r) => r.ligne)).toEqual([1, 2, 3]);
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

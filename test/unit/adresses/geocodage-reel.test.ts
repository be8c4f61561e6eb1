import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importBan } from '../../../domain/adresses/import-ban.ts';
import {
  adressesDesFichiers,
  adressesDesVentes,
  mesurerPrecision,
  type AdresseVente,
} from '../../../domain/adresses/precision.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { fichiersDesChemins } from '../../../domain/import/cli.ts';
import { createTestDb } from '../../support/db.ts';

/**
 * resoudre_adresse on real data: the street addresses of real DVF sales, as DVF writes them, against the real BAN of
 * the same place; and the abbreviated street names of the other real DVF files against a BAN that writes them in
 * full, beside same-name streets of another type.
 */

const SHARED = path.resolve('../shared/data');
const BAN_PARIS = path.join(SHARED, 'ban/adresses-75-extrait-75103-75104.csv');
const DVF_PARIS = path.join(SHARED, 'dvf/paris_75103_75104_2024_2025');
const AUTRES_DVF = [
  'dvf/dvf_api_2019-2023_64260_hendaye_maisons_appartements.csv',
  'dvf/dvf_geoloc_2021_33001_abzac_sample.csv',
  'dvf/ValeursFoncieres-ZZ000001-0000-echantillon-bouchonne.txt',
].map((f) => path.join(SHARED, f));
const hasParis = existsSync(BAN_PARIS) && existsSync(DVF_PARIS);
const hasAutres = AUTRES_DVF.every((f) => existsSync(f));
const SKIP_PARIS = hasParis ? '' : ' (skipped: ../shared/data/ban absent)';
const SKIP_AUTRES = hasAutres ? '' : ' (skipped: ../shared/data/dvf absent)';

let db: Db;
let url: string;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, url, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'geocodage-reel-'));
});
afterAll(async () => {
  await drop?.();
  await rm(dir, { recursive: true, force: true });
});

describe('the street addresses of the real DVF sales of Paris 3e and 4e, against the real BAN of both', () => {
  it(
    `puts the street DVF attached first for 99.5 % of them, and for all whose only difficulty is the type abbreviation or the postal code${SKIP_PARIS}`,
    {
      skip: !hasParis,
      timeout: 120_000,
    },
    async () => {
      const report = await importBan(db, BAN_PARIS);
      expect(report.gardes).toBeGreaterThan(6000);
      const files = readdirSync(DVF_PARIS).map((f) => path.join(DVF_PARIS, f));
      const adresses = await adressesDesFichiers(files);
      expect(adresses.length).toBeGreaterThan(1000);
      const r = await mesurerPrecision(db, 'live', adresses);
      if (r.justes < r.adresses) console.log(r.manquees);
      expect(r.adresses).toBe(adresses.length);
      expect(r.justes / r.adresses).toBeGreaterThanOrEqual(0.995);
      expect(r.simples.adresses).toBeGreaterThan(r.adresses / 2);
      expect(r.simples.justes).toBe(r.simples.adresses);
      // Boulevards, quais, places, passages, impasses and cités of both arrondissements are there, each found.
      const types = new Map(r.parType.map((t) => [t.type, t]));
      for (const type of ['boulevard', 'quai', 'place', 'passage', 'impasse', 'cite', 'square']) {
        expect(types.get(type)?.adresses, type).toBeGreaterThan(0);
        expect(types.get(type)?.justes, type).toBe(types.get(type)?.adresses);
      }
    },
  );
});

describe('npm run precision-adresses, on the sales imported', () => {
  it(
    `geocodes the address of every sale of Paris 3e and 4e as DVF wrote it and reports the share on the right street, per type${SKIP_PARIS}`,
    {
      skip: !hasParis,
      timeout: 180_000,
    },
    async () => {
      await importBan(db, BAN_PARIS);
      await importDvf(db, await fichiersDesChemins([DVF_PARIS], /\.csv(\.gz)?$/));
      const adresses = await adressesDesVentes(db, 'live');
      expect(adresses.length).toBeGreaterThan(2000);
      expect(adresses.every((a) => a.suffixe === null || /^[A-Z]$/.test(a.suffixe))).toBe(true);
      const { stdout } = await promisify(execFile)(process.execPath, ['scripts/precision-adresses.ts'], {
        env: { ...process.env, DATABASE_URL: url },
      });
      const toutes = /\| \*\*toutes\*\* \| (\d+) \| \*\*(\d+) \(/.exec(stdout);
      expect(toutes, stdout).not.toBeNull();
      expect(Number(toutes![1])).toBe(adresses.length);
      expect(Number(toutes![2]) / Number(toutes![1])).toBeGreaterThanOrEqual(0.995);
      expect(stdout).toMatch(/^\| boulevard \| \d+ \| \d+ \(100\.00 %\) \|$/m);
      expect(stdout).toMatch(
        /^\| dont seule difficulté l’abréviation du type ou le code postal \| (\d+) \| \1 \(100\.00 %\) \|$/m,
      );
    },
  );
});

// DVF abbreviations of these files, and the type the BAN writes in full.
const TYPES_EN_ENTIER: Record<string, string> = {
  ALL: 'Allée',
  AV: 'Avenue',
  BD: 'Boulevard',
  CHE: 'Chemin',
  CITE: 'Cité',
  COUR: 'Cour',
  CRS: 'Cours',
  IMP: 'Impasse',
  LOT: 'Lotissement',
  PAS: 'Passage',
  PL: 'Place',
  PRV: 'Parvis',
  QUAI: 'Quai',
  RES: 'Résidence',
  RLE: 'Ruelle',
  RTE: 'Route',
  RUE: 'Rue',
  SQ: 'Square',
  VC: 'Voie Communale',
  VLA: 'Villa',
};
const PARTICULES = new Set(['DE', 'DU', 'DES', 'LA', 'LE', 'LES', 'ET', 'EN', 'SUR', 'AUX', 'AU', 'SOUS']);

/** A DVF street name as the BAN writes it: type in full, words capitalised, elisions with their apostrophe. */
function enEntier(abrege: string, nom: string): string {
  const mots = nom.split(' ');
  const out: string[] = [];
  for (let i = 0; i < mots.length; i++) {
    const m = mots[i];
    if ((m === 'D' || m === 'L') && i + 1 < mots.length) {
      out.push(`${m.toLowerCase()}'${mots[++i][0]}${mots[i].slice(1).toLowerCase()}`);
    } else if (PARTICULES.has(m)) out.push(m.toLowerCase());
    else out.push(m[0] + m.slice(1).toLowerCase());
  }
  return [TYPES_EN_ENTIER[abrege], ...out].join(' ');
}

describe('the abbreviated street names of the other real DVF files (Hendaye, Abzac, Lille)', () => {
  it(
    `finds each on its street, written in full in the BAN beside a same-name street of another type${SKIP_AUTRES}`,
    {
      skip: !hasAutres,
      timeout: 120_000,
    },
    async () => {
      const adresses = (await adressesDesFichiers(AUTRES_DVF)).filter(
        (a) => TYPES_EN_ENTIER[a.voie.split(' ')[0]] && a.voie.includes(' '),
      );
      const header = 'id;id_fantoir;numero;rep;nom_voie;code_postal;code_insee;nom_commune;lon;lat;nom_afnor';
      const lignes = [header];
      const voies = new Map<string, AdresseVente[]>();
      for (const a of adresses) {
        const cle = `${a.insee}_${a.code_voie.padStart(4, '0')}`;
        voies.set(cle, [...(voies.get(cle) ?? []), a]);
      }
      const reelles = new Set(
        [...voies.values()].map(
          (n) => `${n[0].insee}|${enEntier(n[0].voie.split(' ')[0], n[0].voie.split(' ').slice(1).join(' '))}`,
        ),
      );
      let leurre = 0;
      for (const [cle, numeros] of voies) {
        const [abrege, ...reste] = numeros[0].voie.split(' ');
        const nom = enEntier(abrege, reste.join(' '));
        const autre = enEntier(abrege === 'RUE' ? 'AV' : 'RUE', reste.join(' '));
        const insee = cle.slice(0, 5);
        const vus = new Set<string>();
        numeros.forEach((a, i) => {
          const rep = a.suffixe ? ({ B: 'bis', T: 'ter', Q: 'quater' }[a.suffixe] ?? a.suffixe.toLowerCase()) : '';
          const id = `${cle}_${String(a.numero).padStart(5, '0')}${rep ? `_${rep}` : ''}`.toLowerCase();
          if (vus.has(id)) return;
          vus.add(id);
          // The files without coordinates: a point per street, numbers 10 m apart.
          const lat = a.lat ?? 45 + (Number(cle.slice(6).replace(/\D/g, '')) % 1000) / 1e4 + i * 1e-4;
          const lon = a.lon ?? 3 + (Number(cle.slice(0, 5).replace(/\D/g, '')) % 1000) / 1e4;
          const row = (i: string, n: string) => [
            i,
            '',
            a.numero,
            rep,
            n,
            a.code_postal,
            insee,
            a.commune,
            lon,
            lat,
            n.normalize('NFD').replace(/\p{M}/gu, '').toUpperCase(),
          ];
          lignes.push([...row(id, nom).slice(0, 1), cle.toUpperCase(), ...row(id, nom).slice(2)].join(';'));
          // The same name with another type, elsewhere in the commune: a Boulevard is not a Rue.
          if (reelles.has(`${insee}|${autre}`)) return;
          const idAutre = `${insee}_lr${String(leurre).padStart(4, '0')}_${String(a.numero).padStart(5, '0')}${rep ? `_${rep}` : ''}`;
          lignes.push(row(idAutre.toLowerCase(), autre).join(';'));
        });
        leurre++;
      }
      const ban = path.join(dir, 'adresses-autres.csv');
      await writeFile(ban, `${lignes.join('\n')}\n`);
      const report = await importBan(db, ban);
      expect(report.rejetes).toEqual([]);
      const r = await mesurerPrecision(db, 'live', adresses);
      if (r.justes < r.adresses) console.log(r.manquees);
      expect(r.adresses).toBeGreaterThan(1500);
      const types = r.parType.map((t) => t.type);
      for (const type of [
        'boulevard',
        'avenue',
        'chemin',
        'allee',
        'passage',
        'route',
        'cite',
        'cours',
        'parvis',
        'villa',
      ])
        expect(types, type).toContain(type);
      expect(r.justes).toBe(r.adresses);
    },
  );
});

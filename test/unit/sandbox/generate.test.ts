import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitCsvLine } from '../../../domain/adresses/import-ban.ts';
import {
  FICTIF,
  generateSandbox,
  SANDBOX_SEED,
  SANDBOX_SOURCES,
  type SandboxFiles,
} from '../../../domain/sandbox/generate.ts';
import { SANDBOX_COMMUNES } from '../../../domain/platform/sandbox.ts';
import { mulberry32 } from '../../../lib/random.ts';

// The generator alone, without a database: determinism and what the files say.

const ZONAGE_REEL = path.resolve('../shared/data/zonage_abc/zonage-abc-juillet-2024.csv');
const hasZonage = existsSync(ZONAGE_REEL);
const SKIP_ZONAGE = hasZonage ? '' : '(skipped: ../shared/data/zonage_abc absent)';

let dir: string;
let a: SandboxFiles;
let b: SandboxFiles;
let autre: SandboxFiles;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-sandbox-gen-'));
  a = await generateSandbox(path.join(dir, 'a'), { seed: SANDBOX_SEED });
  b = await generateSandbox(path.join(dir, 'b'), { seed: SANDBOX_SEED });
  autre = await generateSandbox(path.join(dir, 'autre'), { seed: SANDBOX_SEED + 1 });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const all = (f: SandboxFiles) => SANDBOX_SOURCES.flatMap((s) => f[s]);

/** The bytes of a generated file, or of a package folder: its files' names and bytes, in order. */
async function octets(unite: string): Promise<Buffer> {
  if (!(await stat(unite)).isDirectory()) return readFile(unite);
  const fichiers = (await readdir(unite, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
  return Buffer.concat(
    await Promise.all(fichiers.flatMap((f) => [Promise.resolve(Buffer.from(f.slice(unite.length))), readFile(f)])),
  );
}

/** Rows of a generated CSV as objects, by header name. */
async function rows(file: string, separator: string): Promise<Array<Record<string, string>>> {
  const [header, ...lines] = (await readFile(file, 'utf8')).trimEnd().split('\n');
  const names = splitCsvLine(header, separator);
  return lines.map((l) => Object.fromEntries(splitCsvLine(l, separator).map((v, i) => [names[i], v])));
}

describe('generateSandbox', () => {
  it('writes one or more files per source', () => {
    for (const s of SANDBOX_SOURCES) expect(a[s].length, s).toBeGreaterThan(0);
    expect(a.dpe.map((f) => path.basename(f))).toEqual([
      'dpe-logements-existants.csv',
      'audits-energetiques.csv',
      'dpe-historique-pre-marche.csv',
      'audits-historique-pre-marche.csv',
    ]);
    expect(a.sirene.map((f) => path.basename(f))).toEqual(['StockUniteLegale.csv', 'StockEtablissement.csv']);
  });

  it('writes the same bytes for the same seed', async () => {
    for (const [i, file] of all(a).entries()) {
      expect(await octets(file), path.basename(file)).toEqual(await octets(all(b)[i]));
    }
  });

  it('writes other data for another seed (outlines, the decree’s A/B/C zoning and the rules excepted: nothing drawn)', async () => {
    for (const [i, file] of all(a).entries()) {
      const same = (await octets(file)).equals(await octets(all(autre)[i]));
      expect(same, path.basename(file)).toBe(/\.geojson$|zonage-abc|reglements/.test(file));
    }
  });

  it('has a deterministic PRNG', () => {
    const x = mulberry32(42);
    const y = mulberry32(42);
    const draws = Array.from({ length: 5 }, () => x());
    expect(draws).toEqual(Array.from({ length: 5 }, () => y()));
    expect(draws.every((d) => d >= 0 && d < 1)).toBe(true);
    expect(mulberry32(43)()).not.toBe(draws[0]);
  });

  it('covers the five communes with addresses, and Strasbourg with no sale', async () => {
    const ban = await rows(a.ban[0], ';');
    const dvf = await rows(a.dvf[0], ',');
    for (const insee of SANDBOX_COMMUNES) {
      expect(ban.filter((r) => r.code_insee === insee).length, insee).toBeGreaterThan(150);
      const ventes = new Set(dvf.filter((r) => r.code_commune === insee).map((r) => r.id_mutation));
      if (insee === '67482') expect(ventes.size).toBe(0);
      else expect(ventes.size, insee).toBeGreaterThanOrEqual(40);
    }
    expect(new Set(dvf.map((r) => r.date_mutation.slice(0, 4)))).toEqual(
      new Set(['2018', '2019', '2020', '2021', '2022', '2023', '2024', '2025']),
    );
    // Every sale is at a BAN number or on a street of the BAN, with the BAN's street code.
    const codes = new Set(ban.map((r) => `${r.code_insee}_${r.id.split('_')[1].toUpperCase()}`));
    expect(dvf.every((r) => codes.has(`${r.code_commune}_${r.adresse_code_voie}`))).toBe(true);
  });

  it('has every DPE class, dated 2021-2025, and audits of F and G dwellings only', async () => {
    const dpe = await rows(a.dpe[0], ',');
    const audits = await rows(a.dpe[1], ',');
    expect(new Set(dpe.map((r) => r['Etiquette_DPE']))).toEqual(new Set(['A', 'B', 'C', 'D', 'E', 'F', 'G']));
    expect(
      dpe.every((r) => r['Date_établissement_DPE'] >= '2021-07-01' && r['Date_établissement_DPE'] <= '2025-12-31'),
    ).toBe(true);
    const classe = new Map(dpe.map((r) => [r['N°DPE'], r['Etiquette_DPE']]));
    const audites = new Set(audits.map((r) => r.numero_dpe));
    expect(audites.size).toBeGreaterThanOrEqual(5);
    for (const n of audites) expect(['F', 'G']).toContain(classe.get(n));
  });

  it('writes the rent indicators in the 2025 layout and the A/B/C zoning as the national list, in Windows-1252', async () => {
    expect(a.loyers.map((f) => path.basename(f))).toEqual([
      'pred-app-mef-dhup-2025.csv',
      'pred-app12-mef-dhup-2025.csv',
      'pred-app3-mef-dhup-2025.csv',
      'pred-mai-mef-dhup-2025.csv',
    ]);
    for (const file of a.loyers) {
      const texte = new TextDecoder('windows-1252').decode(await readFile(file));
      const [entete, ...lignes] = texte.split('\r\n');
      expect(entete, file).toBe(
        '"id_zone";"INSEE_C";"LIBGEO";"EPCI";"DEP";"REG";"loypredm2";"lwr.IPm2";"upr.IPm2";"TYPPRED";"nbobs_com";"nbobs_mail";"R2_adj"',
      );
      expect(lignes.pop()).toBe('');
      // Quoted text, numbers with a decimal comma, as published.
      expect(lignes.every((l) => /^"\d+";"\d{5}";"[^"]+";"\d{9}";"\d+";"\d+";\d+,\d+;\d+,\d+;\d+,\d+;"/.test(l))).toBe(
        true,
      );
      const champs = lignes.map((l) => splitCsvLine(l, ';'));
      expect(champs.map((c) => c[1]).sort()).toEqual([...SANDBOX_COMMUNES].sort());
      for (const c of champs) {
        expect(c[2].endsWith(FICTIF.loyer), c[2]).toBe(true);
        const [loyer, bas, haut] = c.slice(6, 9).map((v) => Number(v.replace(',', '.')));
        expect(bas < loyer && loyer < haut, c[1]).toBe(true);
        expect(['commune', 'maille']).toContain(c[9]);
      }
    }
    const zonage = new TextDecoder('windows-1252').decode(await readFile(a['zonage-abc'][0]));
    expect(path.basename(a['zonage-abc'][0])).toBe('zonage-abc-juillet-2024.csv');
    expect(zonage.split('\r\n')).toEqual([
      'CODGEO;REG;DEP;LIBGEO;Zone en vigueur depuis le 5 juillet 2024;Reclassement juillet 2024',
      '33001;75;33;Abzac;C;Non',
      '33234;75;33;Latresne;B1;Non',
      '59350;32;59;Lille;A;Non',
      '67482;44;67;Strasbourg;A;Non',
      '75056;11;75;Paris;Abis;Non',
      '',
    ]);
  });

  it.skipIf(!hasZonage)(`gives the five communes the zones of the real national list ${SKIP_ZONAGE}`, async () => {
    const reel = new Set(new TextDecoder('windows-1252').decode(await readFile(ZONAGE_REEL)).split('\r\n'));
    const lignes = new TextDecoder('windows-1252').decode(await readFile(a['zonage-abc'][0])).split('\r\n');
    for (const ligne of lignes.slice(1, -1)) expect(reel.has(ligne), ligne).toBe(true);
  });

  it('names no natural person: sole traders without names, company names marked as fictitious', async () => {
    const unites = await rows(a.sirene[0], ',');
    const personnes = unites.filter((r) => r.categorieJuridiqueUniteLegale.startsWith('1'));
    expect(personnes.length).toBeGreaterThan(0);
    for (const u of unites) {
      for (const col of Object.keys(u).filter((c) => /^(nomUniteLegale|nomUsage|prenom|pseudonyme|sexe)/.test(c)))
        expect(u[col]).toBe('');
    }
    for (const p of personnes) expect(p.denominationUniteLegale).toBe('');
    const morales = unites.filter((r) => !r.categorieJuridiqueUniteLegale.startsWith('1'));
    expect(morales.every((u) => u.denominationUniteLegale.endsWith(FICTIF.societe))).toBe(true);
    expect(unites.filter((u) => u.categorieJuridiqueUniteLegale === '6540').length).toBeGreaterThanOrEqual(15);
    const permis = await rows(a.permis[0], ';');
    for (const p of permis.filter((r) => r.CAT_DEM === '10')) {
      expect([p.DENOM_DEM, p.SIREN_DEM, p.CJ_DEM]).toEqual(['', '', '']);
    }
  });
});

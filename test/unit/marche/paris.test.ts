import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { marcheOperations } from '../../../domain/marche/operations.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';

// The real Etalab files of Paris 3e and 4e (75103, 75104), 2024 and 2025: Paris is read by arrondissement.
const DOSSIER = path.resolve('../shared/data/dvf/paris_75103_75104_2024_2025');
const present = existsSync(DOSSIER);
const SKIP = present ? '' : ' (skipped: ../shared/data/dvf/paris_75103_75104_2024_2025 absent)';
const fichiers = present ? readdirSync(DOSSIER).map((f) => path.join(DOSSIER, f)) : [];

/** A CSV line split on commas outside quotes. */
function champs(ligne: string): string[] {
  const out: string[] = [];
  let courant = '';
  let guillemets = false;
  for (const c of ligne) {
    if (c === '"') guillemets = !guillemets;
    else if (c === ',' && !guillemets) {
      out.push(courant);
      courant = '';
    } else courant += c;
  }
  out.push(courant);
  return out;
}

/**
 * The median €/m² of one year's sales of one flat in an arrondissement, from the files alone: a `Vente` whose lines
 * name a single flat (one distinct parcel, surface and lot) and no house or business premises, its value over the
 * flat's surface.
 */
function medianeUnAppartement(insee: string, annee: string): { mediane: number; n: number } {
  const mutations = new Map<string, Array<Record<string, string>>>();
  for (const fichier of fichiers) {
    const [entete, ...lignes] = gunzipSync(readFileSync(fichier)).toString('utf8').trim().split(/\r?\n/);
    const noms = champs(entete);
    for (const l of lignes) {
      const r = Object.fromEntries(champs(l).map((v, i) => [noms[i], v]));
      if (r.code_commune !== insee || !r.date_mutation.startsWith(annee)) continue;
      mutations.set(r.id_mutation, [...(mutations.get(r.id_mutation) ?? []), r]);
    }
  }
  const prix: number[] = [];
  for (const lignes of mutations.values()) {
    if (lignes[0].nature_mutation !== 'Vente') continue;
    if (lignes.some((l) => l.type_local === 'Maison' || l.type_local.startsWith('Local'))) continue;
    const apparts = new Set(
      lignes
        .filter((l) => l.type_local === 'Appartement')
        .map((l) => [l.id_parcelle, l.surface_reelle_bati, l.lot1_numero].join('|')),
    );
    if (apparts.size !== 1) continue;
    const appart = lignes.find((l) => l.type_local === 'Appartement')!;
    const m2 = Number(lignes[0].valeur_fonciere) / Number(appart.surface_reelle_bati);
    if (Number.isFinite(m2) && m2 >= 200 && m2 <= 25_000) prix.push(m2);
  }
  prix.sort((a, b) => a - b);
  const k = Math.floor(prix.length / 2);
  return { mediane: prix.length % 2 ? prix[k] : (prix[k - 1] + prix[k]) / 2, n: prix.length };
}

let t: TestApp;
let cle: string;

beforeAll(async () => {
  t = await createTestApp({ operations: marcheOperations as Operation[] });
  cle = (await t.organisation({ acces: 'usage' })).cle;
  if (present) await importDvf(t.db, fichiers);
}, 120_000);
afterAll(async () => {
  await t?.close();
});

describe('prix_commune in Paris, by arrondissement, on real DVF', () => {
  it.skipIf(!present)(
    `serves each arrondissement's 2024 flat price within 5 % of the file's median${SKIP}`,
    async () => {
      for (const insee of ['75103', '75104']) {
        const attendu = medianeUnAppartement(insee, '2024');
        expect(attendu.n, insee).toBeGreaterThan(100);
        const res = await t.call('GET', `/communes/${insee}/prix?type=appartement`, cle);
        expect(res.statusCode, res.body).toBe(200);
        const item = res.json().bareme.find((b: { millesime: number }) => b.millesime === 2024);
        expect(item.label, insee).toBe('mesure');
        expect(
          Math.abs(item.prix_m2 / attendu.mediane - 1),
          `${insee}: ${item.prix_m2} / ${attendu.mediane}`,
        ).toBeLessThan(0.05);
      }
    },
  );

  it('refuses Paris as a whole, naming its arrondissements', async () => {
    const res = await t.call('GET', '/communes/75056/prix', cle);
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('75101');
  });
});

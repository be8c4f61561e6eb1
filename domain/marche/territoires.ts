import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { DECOUPAGE } from '../communes.ts';

/** Départements and régions by code and name, from the administrative split (read on first use). */

interface Division {
  code: string;
  nom: string;
}

let departements: Map<string, Division> | undefined;
let regions: Division[] | undefined;

function lire(fichier: string): Division[] {
  const require = createRequire(import.meta.url);
  return (JSON.parse(readFileSync(require.resolve(`${DECOUPAGE}/data/${fichier}`), 'utf8')) as Division[]).map((d) => ({
    code: d.code,
    nom: d.nom,
  }));
}

export function departement(code: string): Division | null {
  departements ??= new Map(lire('departements.json').map((d) => [d.code, d]));
  return departements.get(code) ?? null;
}

/** Folded for comparison: no accent, case, dash, apostrophe or space. */
const plier = (s: string) =>
  s
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');

/** The short names régions go by. */
const NOMS_COURTS: Record<string, string> = {
  idf: '11',
  cvl: '24',
  bfc: '27',
  hdf: '32',
  ge: '44',
  pdl: '52',
  ara: '84',
  paca: '93',
  na: '75',
  occ: '76',
};

/** A région by its INSEE code, its name or a short name (IDF, PACA, ARA…), or null. */
export function region(valeur: string): Division | null {
  regions ??= lire('regions.json');
  const v = plier(valeur);
  const code = NOMS_COURTS[v] ?? valeur.trim();
  return regions.find((r) => r.code === code || plier(r.nom) === v) ?? null;
}

import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

// The rows of `dvf` computed from Etalab "DVF géolocalisées" files, by the registry's definition: per mutation, each
// local once (equal locals without lots counted as often as they appear beside one land subdivision of their parcel
// and disposition; a local with lots once), then each land subdivision once; a mutation with neither has one row. Used by the tests
// (test/api/jeux.test.ts) and by the benchmark on real files (bench/jeux.ts): what a read and an aggregate must give.

export interface Attendue {
  id_mutation: string;
  date_mutation: string;
  rang: number;
  valeur_fonciere: number | null;
  type_local: string | null;
  surface_reelle_bati: number | null;
  nombre_pieces_principales: number | null;
  surface_terrain: number | null;
}

/** A row with the commune of its mutation: that of its main line, as the importer takes it (domain/dvf/fold.ts). */
export type LigneAttendue = Attendue & { code_commune: string };

/** A CSV line's fields; quoted fields (a comma inside) as CSV writes them. */
function champs(ligne: string): string[] {
  if (!ligne.includes('"')) return ligne.split(',');
  const out: string[] = [];
  let champ = '';
  let cite = false;
  for (let i = 0; i < ligne.length; i++) {
    const c = ligne[i]!;
    if (cite) {
      if (c === '"' && ligne[i + 1] === '"') {
        champ += '"';
        i++;
      } else if (c === '"') cite = false;
      else champ += c;
    } else if (c === '"') cite = true;
    else if (c === ',') {
      out.push(champ);
      champ = '';
    } else champ += c;
  }
  out.push(champ);
  return out;
}

function lignesCsv(fichier: string): Array<Record<string, string>> {
  const brut = readFileSync(fichier);
  const texte = (fichier.endsWith('.gz') ? gunzipSync(brut) : brut).toString('utf8');
  const [entete, ...lignes] = texte.trim().split(/\r?\n/);
  const noms = champs(entete!);
  return lignes.map((l) => Object.fromEntries(champs(l).map((v, i) => [noms[i]!, v])));
}

const num = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v));

/** The rows of the files (their mutations together), sorted by the sort key of `dvf`. */
export function lignesAttendues(fichiers: string[]): LigneAttendue[] {
  const parMutation = new Map<string, Array<Record<string, string>>>();
  for (const fichier of fichiers) {
    for (const l of lignesCsv(fichier)) {
      const liste = parMutation.get(l.id_mutation!) ?? [];
      liste.push(l);
      parMutation.set(l.id_mutation!, liste);
    }
  }
  const out: LigneAttendue[] = [];
  for (const [id, lignes] of parMutation) {
    const blocs = new Map<string, Array<Record<string, string>>>();
    for (const l of lignes) {
      const cle = `${l.numero_disposition}|${l.id_parcelle}`;
      blocs.set(cle, [...(blocs.get(cle) ?? []), l]);
    }
    const locaux: Array<Record<string, string>> = [];
    const terrains: Array<Record<string, string>> = [];
    for (const bloc of blocs.values()) {
      const terrainDe = (l: Record<string, string>) =>
        l.code_nature_culture || l.surface_terrain
          ? `${l.code_nature_culture}|${l.nature_culture_speciale}|${l.surface_terrain}`
          : null;
      const vus = new Set<string>();
      for (const l of bloc) {
        const tk = terrainDe(l);
        if (tk !== null && !vus.has(tk)) {
          vus.add(tk);
          terrains.push(l);
        }
      }
      // A local: a type, or lots. The same local: the same volume, type, surface, rooms, number of lots and lots
      // (numbers and Carrez surfaces). One with lots is one local however many lines repeat it; one without is
      // counted as often as it appears beside one subdivision.
      const parLocal = new Map<
        string,
        { ligne: Record<string, string>; lots: boolean; n: Map<string | null, number> }
      >();
      for (const l of bloc) {
        const lots = [1, 2, 3, 4, 5]
          .filter((k) => l[`lot${k}_numero`])
          .map((k) => `${l[`lot${k}_numero`]}:${num(l[`lot${k}_surface_carrez`])}`);
        if (!l.type_local && lots.length === 0 && !(Number(l.nombre_lots) > 0)) continue;
        const lk = `${l.numero_volume}|${l.type_local}|${l.surface_reelle_bati}|${l.nombre_pieces_principales}|${Number(l.nombre_lots || 0)}|${lots.join(' ')}`;
        const local = parLocal.get(lk) ?? { ligne: l, lots: lots.length > 0, n: new Map() };
        local.n.set(terrainDe(l), (local.n.get(terrainDe(l)) ?? 0) + 1);
        parLocal.set(lk, local);
      }
      for (const { ligne, lots, n } of parLocal.values()) {
        const fois = lots ? 1 : Math.max(...n.values());
        for (let i = 0; i < fois; i++) locaux.push(ligne);
      }
    }
    // The main line: the first dwelling, else the first local, else a line with a street, else the first.
    const principale =
      lignes.find((l) => l.type_local === 'Maison' || l.type_local === 'Appartement') ??
      lignes.find((l) => l.type_local) ??
      lignes.find((l) => l.adresse_nom_voie) ??
      lignes[0]!;
    const base = {
      id_mutation: id,
      date_mutation: lignes[0]!.date_mutation!,
      valeur_fonciere: num(lignes[0]!.valeur_fonciere),
    };
    let rang = 0;
    const ajouter = (a: Attendue) => out.push({ ...a, code_commune: principale.code_commune! });
    for (const l of locaux) {
      ajouter({
        ...base,
        rang: ++rang,
        type_local: l.type_local || null,
        surface_reelle_bati: num(l.surface_reelle_bati),
        nombre_pieces_principales: num(l.nombre_pieces_principales),
        surface_terrain: null,
      });
    }
    for (const l of terrains) {
      ajouter({
        ...base,
        rang: ++rang,
        type_local: null,
        surface_reelle_bati: null,
        nombre_pieces_principales: null,
        surface_terrain: num(l.surface_terrain),
      });
    }
    if (rang === 0) {
      ajouter({
        ...base,
        rang: 1,
        type_local: null,
        surface_reelle_bati: null,
        nombre_pieces_principales: null,
        surface_terrain: null,
      });
    }
  }
  return out.sort((a, b) =>
    a.date_mutation !== b.date_mutation
      ? a.date_mutation < b.date_mutation
        ? -1
        : 1
      : a.id_mutation !== b.id_mutation
        ? a.id_mutation < b.id_mutation
          ? -1
          : 1
        : a.rang - b.rang,
  );
}

/** The rows of one file, as the tests compare them (without the commune). */
export function attendues(fichier: string): Attendue[] {
  return lignesAttendues([fichier]).map(({ code_commune: _, ...a }) => a);
}

/** Continuous median (linear interpolation between the middle values), as percentile_cont(0.5). */
export function quantile(valeurs: number[], q: number): number | null {
  if (valeurs.length === 0) return null;
  const v = [...valeurs].sort((a, b) => a - b);
  const pos = q * (v.length - 1);
  const bas = Math.floor(pos);
  const haut = Math.ceil(pos);
  return v[bas]! + (v[haut]! - v[bas]!) * (pos - bas);
}

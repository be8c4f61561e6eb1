import { createHash } from 'node:crypto';
import type { Ligne } from './formats.ts';
import {
  PRIX_M2_PLAUSIBLE,
  SURFACE_LOGEMENT_PLAUSIBLE,
  type Local,
  type Mutation,
  type Terrain,
  type TypeLocal,
} from './mutation.ts';

/**
 * Folding: the lines of one mutation into one row.
 *
 * What is computed per mutation, and why:
 * - Lines of the Etalab file are the product of a parcel's locals by its land subdivisions (a house on a parcel of
 *   three crop types comes on three lines). A local is counted once per parcel and disposition: the number of equal
 *   locals is the most times they appear alongside one subdivision (two flats of 56 m² next to one subdivision are
 *   two flats, as DVF writes one line per local). Equal locals with the same lot numbers are one local (a lot is sold
 *   once); equal locals without lots cannot be told apart from a duplicated line: they are counted, and the mutation
 *   is flagged `doublon_probable`. The raw file's `Identifiant local` makes all this exact when present.
 * - `surface_logements`: sum of the built surfaces of the flats and houses so counted; `prix_m2` = valeur foncière /
 *   surface_logements, to the cent (the price of everything sold, dependencies and business premises included: the
 *   indicators say when that is the case).
 * - `vente_en_bloc`: two dwellings or more; `avec_dependance`, `avec_local_pro`: a dependency, business premises.
 * - `prix_atypique`: a price per m² outside 200-25 000 €/m² (below, no dwelling sells in France, even in rural areas;
 *   above, the dearest Paris sales), or a value of 1 € or less (symbolic price, placeholder).
 * - `surface_atypique`: an average under 9 m² per dwelling (the legal minimum of a dwelling) or over 1 000 m².
 * - `motif`: the first reason why the price per m² should not be read as the price of one dwelling, or null.
 */

const round2 = (n: number) => Math.round(n * 100) / 100;
const isLogement = (t: TypeLocal | null) => t === 'maison' || t === 'appartement';

/** The id of a raw DGFiP mutation: its grouping key and first parcel, hashed (the file has no id). */
function idDgfip(lines: Ligne[]): string {
  const parcelle = lines.reduce((min, l) => (l.parcelle < min ? l.parcelle : min), lines[0].parcelle);
  const hash = createHash('sha256').update(lines[0].cle).update('|').update(parcelle).digest('hex').slice(0, 16);
  return `${lines[0].date.slice(0, 4)}-D${hash}`;
}

export function idOf(lines: Ligne[]): string {
  return lines[0].idMutation ?? idDgfip(lines);
}

/** A disposition's parcel: its land subdivisions, and its distinct locals with their count beside each subdivision. */
interface Bloc {
  disposition: string;
  parcelle: string;
  /** A line of each distinct subdivision, and the subdivision. */
  terrains: Array<{ ligne: Ligne; terrain: Terrain }>;
  /** A line of each distinct local; its count per subdivision line (null: the lines without land). */
  locaux: Array<{ ligne: Ligne; local: Local; lots: number; n: Array<{ terrain: Ligne | null; n: number }> }>;
}

const aDuTerrain = (l: Ligne) => l.cultureCode !== null || l.surfaceTerrain !== null;
/** One land subdivision: same culture, special culture and surface. */
const memeTerrain = (a: Ligne | null, b: Ligne | null) =>
  a === b ||
  (a !== null &&
    b !== null &&
    a.cultureCode === b.cultureCode &&
    a.speciale === b.speciale &&
    a.surfaceTerrain === b.surfaceTerrain);
/** One local: the same identifier, or without one, the same volume, type, surface, rooms and lots. */
function memeLocal(a: Ligne, b: Ligne): boolean {
  if (a.identifiantLocal !== null || b.identifiantLocal !== null) return a.identifiantLocal === b.identifiantLocal;
  if (
    a.volume !== b.volume ||
    a.typeLocal !== b.typeLocal ||
    a.surfaceBati !== b.surfaceBati ||
    a.pieces !== b.pieces ||
    a.nombreLots !== b.nombreLots ||
    a.lots.length !== b.lots.length
  ) {
    return false;
  }
  for (let i = 0; i < a.lots.length; i++) {
    if (a.lots[i].numero !== b.lots[i].numero || a.lots[i].carrez !== b.lots[i].carrez) return false;
  }
  return true;
}

/**
 * Folds the lines of one mutation into one row, with the recomputed fields (see the top of this file). Lines are
 * compared field by field (the lists of a mutation are short: a scan, without building keys or maps).
 */
export function foldMutation(lines: Ligne[], format: 'etalab' | 'dgfip'): Mutation {
  const first = lines[0];
  const parcelles: string[] = [];
  const volumes: string[] = [];
  const dispositions: string[] = [];
  const blocs: Bloc[] = [];
  for (const l of lines) {
    if (!dispositions.includes(l.disposition)) dispositions.push(l.disposition);
    if (!parcelles.includes(l.parcelle)) parcelles.push(l.parcelle);
    if (l.volume && !volumes.includes(l.volume)) volumes.push(l.volume);
    let bloc = blocs.find((b) => b.disposition === l.disposition && b.parcelle === l.parcelle);
    if (!bloc) {
      bloc = { disposition: l.disposition, parcelle: l.parcelle, terrains: [], locaux: [] };
      blocs.push(bloc);
    }
    const terrain = aDuTerrain(l) ? l : null;
    if (terrain && !bloc.terrains.some((t) => memeTerrain(t.ligne, terrain))) {
      bloc.terrains.push({
        ligne: l,
        terrain: {
          id_parcelle: l.parcelle,
          nature_culture: l.culture,
          nature_culture_speciale: l.speciale,
          surface: l.surfaceTerrain,
        },
      });
    }
    if (l.typeLocal || l.identifiantLocal || l.lots.length > 0 || l.nombreLots > 0) {
      let local = bloc.locaux.find((x) => memeLocal(x.ligne, l));
      if (!local) {
        local = {
          ligne: l,
          local: {
            type: l.typeLocal,
            surface_bati: l.surfaceBati,
            pieces: l.pieces,
            id_parcelle: l.parcelle,
            lots: l.lots,
          },
          lots: l.nombreLots,
          n: [],
        };
        bloc.locaux.push(local);
      }
      // A local known by its identifier is one local, however many lines carry it.
      if (!l.identifiantLocal) {
        const count = local.n.find((c) => memeTerrain(c.terrain, terrain));
        if (count) count.n++;
        else local.n.push({ terrain, n: 1 });
      }
    }
  }
  const locaux: Local[] = [];
  const terrains: Terrain[] = [];
  let nombreLots = 0;
  let doublonProbable = false;
  for (const bloc of blocs) {
    for (const t of bloc.terrains) terrains.push(t.terrain);
    for (const { local, lots, n } of bloc.locaux) {
      let count = 1;
      if (local.lots.length === 0) for (const c of n) if (c.n > count) count = c.n;
      if (count > 1) doublonProbable = true;
      for (let i = 0; i < count; i++) locaux.push(local);
      nombreLots += lots * count;
    }
  }
  const logements = locaux.filter((l) => isLogement(l.type));
  const surfaceSum = logements.reduce((s, l) => s + (l.surface_bati ?? 0), 0);
  const surfaceLogements = logements.length > 0 && surfaceSum > 0 ? round2(surfaceSum) : null;
  const valeur = first.valeur;
  const prixM2 = valeur !== null && valeur > 0 && surfaceLogements !== null ? round2(valeur / surfaceLogements) : null;
  const types = [...new Set(locaux.map((l) => l.type).filter((t): t is TypeLocal => t !== null))];
  const venteEnBloc = logements.length >= 2;
  const avecLocalPro = types.includes('local');
  const symbolique = valeur !== null && valeur <= 1;
  const prixAtypique =
    symbolique || (prixM2 !== null && (prixM2 < PRIX_M2_PLAUSIBLE.min || prixM2 > PRIX_M2_PLAUSIBLE.max));
  const moyenne = surfaceLogements !== null ? surfaceLogements / logements.length : null;
  const surfaceAtypique =
    logements.length > 0 &&
    (moyenne === null || moyenne < SURFACE_LOGEMENT_PLAUSIBLE.min || moyenne > SURFACE_LOGEMENT_PLAUSIBLE.max);

  let motif: string | null = null;
  if (valeur === null) motif = 'valeur foncière absente';
  else if (logements.length === 0) motif = 'aucun logement : pas de prix au m²';
  else if (surfaceLogements === null) motif = 'surface des logements absente : pas de prix au m²';
  else if (first.nature === 'echange') motif = 'échange : la valeur n’est pas un prix de marché';
  else if (first.nature === 'expropriation') motif = 'expropriation : la valeur est une indemnité';
  else if (symbolique) motif = 'prix symbolique (1 € ou moins)';
  else if (prixAtypique) {
    motif = `prix au m² hors des bornes plausibles (${PRIX_M2_PLAUSIBLE.min} à ${PRIX_M2_PLAUSIBLE.max} €/m²)`;
  } else if (surfaceAtypique) {
    motif = `surface moyenne par logement hors des bornes plausibles (${SURFACE_LOGEMENT_PLAUSIBLE.min} à ${SURFACE_LOGEMENT_PLAUSIBLE.max} m²)`;
  } else if (doublonProbable) {
    motif = 'locaux identiques sur plusieurs lignes : doublon probable, la surface peut être comptée deux fois';
  } else if (venteEnBloc) motif = `vente en bloc de ${logements.length} logements : prix au m² moyen de l’ensemble`;
  else if (avecLocalPro) motif = 'le prix comprend un local professionnel';

  // The address and position of the main line: the first dwelling, else the first local, else a line with a street.
  const principale =
    lines.find((l) => isLogement(l.typeLocal)) ?? lines.find((l) => l.typeLocal) ?? lines.find((l) => l.voie) ?? first;
  const situee =
    principale.lat !== null && principale.lon !== null
      ? principale
      : lines.find((l) => l.lat !== null && l.lon !== null);
  const surfaceTerrain = terrains.reduce((s, t) => s + (t.surface ?? 0), 0);

  return {
    id_mutation: idOf(lines),
    format,
    date_mutation: first.date,
    millesime: Number(first.date.slice(0, 4)),
    nature: first.nature,
    nature_libelle: first.natureLibelle,
    valeur_fonciere: valeur,
    adresse_numero: principale.numero,
    adresse_suffixe: principale.suffixe,
    adresse_voie: principale.voie,
    code_voie: principale.codeVoie,
    code_postal: principale.codePostal,
    insee: principale.insee,
    commune: principale.commune,
    departement: principale.departement,
    lat: situee?.lat ?? null,
    lon: situee?.lon ?? null,
    parcelle_principale: principale.parcelle,
    parcelles,
    volumes,
    nb_dispositions: dispositions.length,
    nb_lignes: lines.length,
    locaux,
    terrains,
    nombre_lots: nombreLots,
    surface_terrain: terrains.some((t) => t.surface !== null) ? round2(surfaceTerrain) : null,
    types_locaux: types,
    logements: logements.length,
    surface_logements: surfaceLogements,
    prix_m2: prixM2,
    vente_en_bloc: venteEnBloc,
    avec_dependance: types.includes('dependance'),
    avec_local_pro: avecLocalPro,
    prix_atypique: prixAtypique,
    surface_atypique: surfaceAtypique,
    doublon_probable: doublonProbable,
    motif,
  };
}

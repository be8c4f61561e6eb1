import { windows1252 } from './part.ts';

/**
 * A small writer of ESRI shapefiles (.shp, .shx, .dbf, with the .prj and .cpg the CNIG packages carry), for the
 * sandbox packages of the planning documents and easements: points, lines and polygons in projected coordinates
 * (Lambert-93), attributes in text (C) and numeric (N) DBF fields, in UTF-8 or Windows-1252. Outer rings are written
 * clockwise and holes counter-clockwise, as the format wants. Same input, same bytes (the DBF's date is fixed).
 */

export type ValeurDbf = string | number | null;

export interface ChampDbf {
  /** At most 10 characters. */
  nom: string;
  type: 'C' | 'N';
  longueur: number;
  decimales?: number;
}

export type FormeShp = 'point' | 'ligne' | 'polygone';

export interface ObjetShp {
  /** Point: one part of one position. Line: its parts. Polygon: its rings, each closed, outer ring first. */
  parties: Array<Array<[number, number]>>;
  attributs: Record<string, ValeurDbf>;
}

/** The Lambert-93 `.prj` as ESRI software writes it. */
export const PRJ_LAMBERT_93 =
  'PROJCS["RGF93_Lambert_93",GEOGCS["GCS_RGF_1993",DATUM["D_RGF_1993",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",700000.0],PARAMETER["False_Northing",6600000.0],PARAMETER["Central_Meridian",3.0],PARAMETER["Standard_Parallel_1",44.0],PARAMETER["Standard_Parallel_2",49.0],PARAMETER["Latitude_Of_Origin",46.5],UNIT["Meter",1.0]]';

const TYPES: Record<FormeShp, number> = { point: 1, ligne: 3, polygone: 5 };

function encoder(text: string, encodage: 'utf-8' | 'windows-1252'): Uint8Array {
  return encodage === 'utf-8' ? new TextEncoder().encode(text) : windows1252(text);
}

/** A DBF table (dBase III, no memo) of `lignes`, its text in `encodage`. */
export function ecrireDbf(
  champs: ChampDbf[],
  lignes: Array<Record<string, ValeurDbf>>,
  encodage: 'utf-8' | 'windows-1252',
): Uint8Array {
  const entete = 32 + 32 * champs.length + 1;
  const enregistrement = 1 + champs.reduce((s, c) => s + c.longueur, 0);
  const out = new Uint8Array(entete + enregistrement * lignes.length + 1);
  const v = new DataView(out.buffer);
  out[0] = 0x03;
  // The date of last update: fixed, so that the bytes depend on the content alone.
  out.set([124, 1, 1], 1);
  v.setUint32(4, lignes.length, true);
  v.setUint16(8, entete, true);
  v.setUint16(10, enregistrement, true);
  champs.forEach((c, i) => {
    const o = 32 + 32 * i;
    out.set(new TextEncoder().encode(c.nom.slice(0, 10)), o);
    out[o + 11] = c.type.charCodeAt(0);
    out[o + 16] = c.longueur;
    out[o + 17] = c.decimales ?? 0;
  });
  out[entete - 1] = 0x0d;
  lignes.forEach((ligne, r) => {
    let o = entete + r * enregistrement;
    out[o++] = 0x20;
    for (const c of champs) {
      const valeur = ligne[c.nom];
      let octets: Uint8Array;
      if (valeur === null || valeur === undefined) octets = new Uint8Array(0);
      else if (c.type === 'N') {
        const t = typeof valeur === 'number' ? valeur.toFixed(c.decimales ?? 0) : valeur;
        octets = new TextEncoder().encode(t.padStart(c.longueur, ' '));
      } else octets = encoder(String(valeur), encodage);
      if (octets.length > c.longueur) throw new Error(`${c.nom} : « ${String(valeur)} » dépasse ${c.longueur} octets`);
      out.fill(0x20, o, o + c.longueur);
      out.set(octets, o);
      o += c.longueur;
    }
  });
  out[out.length - 1] = 0x1a;
  return out;
}

function aireSignee(ring: Array<[number, number]>): number {
  let a = 0;
  for (let i = 1; i < ring.length; i++) a += ring[i - 1][1] * ring[i][0] - ring[i - 1][0] * ring[i][1];
  return a;
}

/** The rings of a polygon as the format orders them: the outer one clockwise, the holes counter-clockwise. */
function orienter(parties: Array<Array<[number, number]>>): Array<Array<[number, number]>> {
  return parties.map((ring, i) => {
    const horaire = aireSignee(ring) >= 0;
    return horaire === (i === 0) ? ring : [...ring].reverse();
  });
}

/** The .shp and .shx of `objets`. */
function ecrireShp(forme: FormeShp, objets: ObjetShp[]): { shp: Uint8Array; shx: Uint8Array } {
  const contenus = objets.map((objet) => {
    const parties = forme === 'polygone' ? orienter(objet.parties) : objet.parties;
    if (forme === 'point') {
      const c = new DataView(new ArrayBuffer(20));
      c.setInt32(0, 1, true);
      c.setFloat64(4, parties[0][0][0], true);
      c.setFloat64(12, parties[0][0][1], true);
      return { octets: new Uint8Array(c.buffer), points: parties[0] };
    }
    const points = parties.flat();
    const c = new DataView(new ArrayBuffer(44 + 4 * parties.length + 16 * points.length));
    c.setInt32(0, TYPES[forme], true);
    const xs = points.map((p) => p[0]);
    const ys = points.map((p) => p[1]);
    [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)].forEach((b, i) =>
      c.setFloat64(4 + 8 * i, b, true),
    );
    c.setInt32(36, parties.length, true);
    c.setInt32(40, points.length, true);
    let debut = 0;
    parties.forEach((p, i) => {
      c.setInt32(44 + 4 * i, debut, true);
      debut += p.length;
    });
    points.forEach(([x, y], i) => {
      c.setFloat64(44 + 4 * parties.length + 16 * i, x, true);
      c.setFloat64(52 + 4 * parties.length + 16 * i, y, true);
    });
    return { octets: new Uint8Array(c.buffer), points };
  });
  const tous = contenus.flatMap((c) => c.points);
  const boite = [
    Math.min(...tous.map((p) => p[0])),
    Math.min(...tous.map((p) => p[1])),
    Math.max(...tous.map((p) => p[0])),
    Math.max(...tous.map((p) => p[1])),
  ];
  const entete = (longueur: number) => {
    const h = new DataView(new ArrayBuffer(100));
    h.setInt32(0, 9994, false);
    h.setInt32(24, longueur / 2, false);
    h.setInt32(28, 1000, true);
    h.setInt32(32, TYPES[forme], true);
    boite.forEach((b, i) => h.setFloat64(36 + 8 * i, b, true));
    return new Uint8Array(h.buffer);
  };
  const tailleShp = 100 + contenus.reduce((s, c) => s + 8 + c.octets.length, 0);
  const shp = new Uint8Array(tailleShp);
  const shx = new Uint8Array(100 + 8 * contenus.length);
  shp.set(entete(tailleShp), 0);
  shx.set(entete(shx.length), 0);
  const vShp = new DataView(shp.buffer);
  const vShx = new DataView(shx.buffer);
  let o = 100;
  contenus.forEach((c, i) => {
    vShx.setInt32(100 + 8 * i, o / 2, false);
    vShx.setInt32(104 + 8 * i, c.octets.length / 2, false);
    vShp.setInt32(o, i + 1, false);
    vShp.setInt32(o + 4, c.octets.length / 2, false);
    shp.set(c.octets, o + 8);
    o += 8 + c.octets.length;
  });
  return { shp, shx };
}

/**
 * The files of a shapefile layer named `nom` (a path without extension): .shp, .shx, .dbf, .prj (Lambert-93), and a
 * .cpg naming the encoding unless `cpg` is false (a DBF whose encoding only its bytes tell).
 */
export function shapefile(
  nom: string,
  forme: FormeShp,
  champs: ChampDbf[],
  objets: ObjetShp[],
  { encodage, cpg = true }: { encodage: 'utf-8' | 'windows-1252'; cpg?: boolean },
): Array<[string, Uint8Array | string]> {
  const { shp, shx } = ecrireShp(forme, objets);
  return [
    [`${nom}.shp`, shp],
    [`${nom}.shx`, shx],
    [
      `${nom}.dbf`,
      ecrireDbf(
        champs,
        objets.map((o) => o.attributs),
        encodage,
      ),
    ],
    [`${nom}.prj`, PRJ_LAMBERT_93],
    ...(cpg ? ([[`${nom}.cpg`, encodage === 'utf-8' ? 'UTF-8' : '1252']] as Array<[string, string]>) : []),
  ];
}

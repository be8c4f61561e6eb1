import { execFileSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Db } from '../../db/client.ts';
import { importCadastre } from '../../domain/cadastre/import.ts';
import { LECTURE_VERSION } from '../../domain/urbanisme/lectures.ts';
import { importZonage } from '../../domain/urbanisme/zonage-import.ts';
import { fromWgs84, toWgs84 } from '../../lib/geometrie.ts';
import { importAddress, POINTS } from './plu-fixtures.ts';

/**
 * A Latresne site for the dossiers, through the real importers: the parcel of `12 Avenue de la Libération` (20 m
 * east-west by 30 m north-south in Lambert-93, centred on the address), its neighbours west, east and north (the
 * south side gives on the street), a 10 m × 8 m house, zone UA whose rules reading is in lire_plu's cache, and zone
 * UB, published but never read. Coordinates are laid out in Lambert-93 metres, so every distance measured is exact.
 */

export const RULES_URL = 'https://plu.example.fr/latresne-reglement.pdf';
export const UNREAD_URL = 'https://plu.example.fr/autre-reglement.pdf';
export const IDU = '33234000AB0012';
export const IDU_UB = '33234000AC0001';
/** A point of zone UC, whose rules were never read, on a parcel of its own. */
export const POINT_UB = { lat: 44.79, lon: -0.48 };
/** A point of zone UB, whose rules document cannot be fetched, on a parcel of its own. */
export const POINT_ABSENT = { lat: 44.77, lon: -0.47 };

const O = fromWgs84('l93', POINTS.ua.lat, POINTS.ua.lon);
const lonLat = (o: { x: number; y: number }, x: number, y: number) => {
  const p = toWgs84('l93', o.x + x, o.y + y)!;
  return [p.lon, p.lat];
};
const ring = (o: { x: number; y: number }, x0: number, y0: number, x1: number, y1: number) => [
  lonLat(o, x0, y0),
  lonLat(o, x1, y0),
  lonLat(o, x1, y1),
  lonLat(o, x0, y1),
  lonLat(o, x0, y0),
];

/** The measurable rules of zone UA, as lire_plu's reading keeps them (its page texts hold the quotations). */
export const RULES_UA = [
  rule(
    'limites_separatives',
    'distance_min',
    3,
    'm',
    'Les constructions doivent être implantées à une distance des limites séparatives au moins égale à 3 mètres.',
    'UA 7',
    12,
  ),
  rule(
    'hauteur',
    'plafond',
    7,
    'm',
    'La hauteur maximale des constructions est fixée à 7 mètres au faîtage.',
    'UA 10',
    14,
  ),
  rule(
    'emprise_sol',
    'pourcentage_max',
    40,
    '%',
    "L'emprise au sol des constructions ne peut excéder 40 % de la superficie du terrain.",
    'UA 9',
    13,
  ),
  rule(
    'aspect_clotures',
    'qualitatif',
    null,
    null,
    'Les toitures seront en tuiles canal de teinte claire.',
    'UA 11',
    15,
  ),
];

function rule(
  theme: string,
  forme: string,
  valeur: number | null,
  unite: string | null,
  citation: string,
  article: string,
  page: number,
) {
  return {
    theme,
    objets: [],
    secteurs: [],
    exceptions: null,
    forme,
    valeur,
    unite,
    diviseur: null,
    minimum_m: null,
    conditions: null,
    mesure: null,
    resume: citation,
    citation,
    article,
    page,
    a_confirmer: false,
    reserves: [],
    lien: `${RULES_URL}#page=${page}`,
    portee: 'generale',
  };
}

/**
 * `lectureUrl`: the rules document of the zone at POINT_UB (never read); `absentUrl`: that of the zone at
 * POINT_ABSENT (a reading of it fails).
 */
export async function importSite(
  db: Db,
  urls: { lectureUrl?: string; absentUrl?: string } = {},
): Promise<{ cleBan: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-dossiers-'));
  const feature = (id: string, coords: number[][]) => ({
    type: 'Feature',
    id,
    geometry: { type: 'Polygon', coordinates: [coords] },
    properties: {
      id,
      commune: '33234',
      prefixe: '000',
      section: id.slice(8, 10),
      numero: String(Number(id.slice(10))),
      contenance: 600,
    },
  });
  const ub = fromWgs84('l93', POINT_UB.lat, POINT_UB.lon);
  const absent = fromWgs84('l93', POINT_ABSENT.lat, POINT_ABSENT.lon);
  const parcelles = [
    feature(IDU, ring(O, -10, -15, 10, 15)),
    feature('33234000AB0011', ring(O, -30, -15, -10, 15)),
    feature('33234000AB0013', ring(O, 10, -15, 30, 15)),
    feature('33234000AB0020', ring(O, -30, 15, 30, 35)),
    feature(IDU_UB, ring(ub, -15, -15, 15, 15)),
    feature('33234000AD0001', ring(absent, -15, -15, 15, 15)),
  ];
  const batiments = [
    {
      type: 'Feature',
      geometry: { type: 'Polygon', coordinates: [ring(O, -5, -2, 5, 6)] },
      properties: { type: '01', commune: '33234' },
    },
  ];
  const fp = path.join(dir, 'cadastre-33234-parcelles.json');
  const fb = path.join(dir, 'cadastre-33234-batiments.json');
  await writeFile(fp, JSON.stringify({ type: 'FeatureCollection', features: parcelles }));
  await writeFile(fb, JSON.stringify({ type: 'FeatureCollection', features: batiments }));
  await importCadastre(db, [fp, fb]);

  const zone = (libelle: string, url: string, o: { x: number; y: number }) => ({
    type: 'Feature',
    properties: {
      libelle,
      libelong: `Zone ${libelle}`,
      typezone: 'U',
      idurba: '33234_PLU_20170123',
      datappro: '20170123',
      urlfic: `${url}#page=7`,
    },
    geometry: { type: 'Polygon', coordinates: [ring(o, -200, -200, 200, 200)] },
  });
  const fz = path.join(dir, 'zones.geojson');
  await writeFile(
    fz,
    JSON.stringify({
      type: 'FeatureCollection',
      features: [
        zone('UA', RULES_URL, O),
        zone('UC', urls.lectureUrl ?? UNREAD_URL, ub),
        zone('UB', urls.absentUrl ?? `${UNREAD_URL}-absent`, absent),
      ],
    }),
  );
  await importZonage(db, fz);

  // lire_plu's cache: the rules document as fetched, and the reading of zone UA.
  const pages = Array.from({ length: 16 }, (_, i) =>
    RULES_UA.filter((r) => r.page === i + 1)
      .map((r) => r.citation)
      .join('\n'),
  );
  await db.query(
    `INSERT INTO reglements_pdf (url, sha256, taille_octets, pages, nb_pages, scanne)
     VALUES ($1, 'sha-latresne', 1000, $2, 16, false)`,
    [RULES_URL, JSON.stringify(pages)],
  );
  await db.query(
    `INSERT INTO lectures_plu (document_sha256, zone, version, contenu, modele) VALUES ('sha-latresne', 'UA', $1, $2, 'modele-scripte')`,
    [
      LECTURE_VERSION,
      JSON.stringify({
        regles: RULES_UA,
        definitions: [],
        renvois: [],
        non_trouve: [],
        citations_ecartees: 0,
        pages_lues: [12, 13, 14, 15],
      }),
    ],
  );
  return { cleBan: await importAddress(db) };
}

/** The text of a PDF by poppler's pdftotext (independent of our own drawing code), whitespace collapsed. */
export function pdftotext(bytes: Uint8Array): string {
  return execFileSync('pdftotext', ['-layout', '-', '-'], { input: Buffer.from(bytes), encoding: 'utf8' }).replace(
    /\s+/g,
    ' ',
  );
}

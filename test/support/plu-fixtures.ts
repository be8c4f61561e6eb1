import { existsSync } from 'node:fs';
import { readFile, writeFile, mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Db } from '../../db/client.ts';
import { importBan } from '../../domain/adresses/import-ban.ts';
import { importZonage } from '../../domain/urbanisme/zonage-import.ts';
import { promptText, type ChatRequestBody, type ModelReply } from './model-server.ts';

export const PLU_PDF = path.resolve('../shared/data/plu_pdf/latresne_33234_reglement_first.pdf');
export const SCANNED_PDF = path.resolve('../shared/data/plu_pdf/DERIVED_latresne_33234_p14-16_image_only.pdf');
export const hasPluData = existsSync(PLU_PDF) && existsSync(SCANNED_PDF);

/**
 * Latresne points: one in a UA square (rules PDF), one in a UB square (scanned PDF), one in an N square whose
 * document publishes no rules PDF, one outside any zone.
 */
export const POINTS = {
  ua: { lat: 44.7816, lon: -0.4945 },
  scanne: { lat: 44.79, lon: -0.48 },
  non_publie: { lat: 44.77, lon: -0.47 },
  hors_zone: { lat: 45.5, lon: 1.5 },
};

const square = (lat: number, lon: number, d = 0.002) => ({
  type: 'Polygon',
  coordinates: [
    [
      [lon - d, lat - d],
      [lon + d, lat - d],
      [lon + d, lat + d],
      [lon - d, lat + d],
      [lon - d, lat - d],
    ],
  ],
});

/** Serves the real rules PDFs over loopback, as a commune's website would. */
export async function servePdfs(): Promise<{ url: string; hits: () => number; close(): void }> {
  const files: Record<string, Buffer> = {
    '/latresne.pdf': await readFile(PLU_PDF),
    '/scanne.pdf': await readFile(SCANNED_PDF),
  };
  let hits = 0;
  const server: Server = createServer((req, res) => {
    const body = files[req.url ?? ''];
    hits += 1;
    if (!body) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, hits: () => hits, close: () => server.close() };
}

/** Imports three zones through the real GPU importer (GeoJSON with the ZONE_URBA properties). */
export async function importZones(db: Db, pdfBase: string): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-zones-'));
  const file = path.join(dir, 'zones.geojson');
  await writeFile(
    file,
    JSON.stringify({
      type: 'FeatureCollection',
      features: [
        {
          type: 'Feature',
          properties: {
            libelle: 'UA',
            libelong: 'Zone urbaine ancienne',
            typezone: 'U',
            idurba: '33234_PLU_20170123',
            datappro: '20170123',
            urlfic: `${pdfBase}/latresne.pdf#page=7`,
          },
          geometry: square(POINTS.ua.lat, POINTS.ua.lon),
        },
        {
          type: 'Feature',
          properties: {
            libelle: 'UB',
            libelong: 'Zone urbaine',
            typezone: 'U',
            idurba: '33234_PLU_20170123',
            datappro: '20170123',
            urlfic: `${pdfBase}/scanne.pdf`,
          },
          geometry: square(POINTS.scanne.lat, POINTS.scanne.lon),
        },
        {
          type: 'Feature',
          properties: {
            libelle: 'N',
            libelong: 'Zone naturelle',
            typezone: 'N',
            idurba: '33234_PLU_20170123',
            datappro: '20170123',
            urlfic: '',
          },
          geometry: square(POINTS.non_publie.lat, POINTS.non_publie.lon),
        },
      ],
    }),
  );
  await importZonage(db, file);
}

/** One BAN number at the UA point, through the real BAN importer: `12 Avenue de la Libération 33360 Latresne`. */
export async function importAddress(db: Db): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-ban-'));
  const file = path.join(dir, 'adresses-33.csv');
  const header =
    'id;id_fantoir;numero;rep;nom_voie;code_postal;code_insee;nom_commune;code_insee_ancienne_commune;nom_ancienne_commune;x;y;lon;lat;type_position;alias;nom_ld;libelle_acheminement;nom_afnor;source_position;source_nom_voie;certification_commune;cad_parcelles';
  const row = [
    '33234_0420_00012',
    '33234_0420',
    '12',
    '',
    'Avenue de la Libération',
    '33360',
    '33234',
    'Latresne',
    '',
    '',
    '',
    '',
    String(POINTS.ua.lon),
    String(POINTS.ua.lat),
    'entrée',
    '',
    '',
    'LATRESNE',
    'AVENUE DE LA LIBERATION',
    'commune',
    'commune',
    '1',
    '33234000AB0012',
  ].join(';');
  await writeFile(file, `${header}\n${row}\n`);
  await importBan(db, file);
  return '33234_0420_00012';
}

/**
 * A model that reads like a good one: for each page sent, it quotes verbatim the first line that speaks of height,
 * distances or parking, and adds one invented quotation the server must discard.
 */
export function readingModel(body: ChatRequestBody): ModelReply {
  const prompt = promptText(body);
  const regles: unknown[] = [];
  for (const match of prompt.matchAll(/<<<PAGE (\d+)>>>([\s\S]*?)<<<FIN PAGE \1>>>/g)) {
    const page = Number(match[1]);
    const line = match[2]
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.length > 40 && /hauteur maximale|recul|stationnement|limites séparatives/i.test(l));
    if (line)
      regles.push(
        rule(
          /hauteur/i.test(line) ? 'hauteur' : /stationnement/i.test(line) ? 'stationnement' : 'limites_separatives',
          line,
          page,
        ),
      );
  }
  regles.push(rule('hauteur', 'La hauteur maximale des constructions est fixée à 45 mètres en toute circonstance.', 9));
  return { json: { regles, definitions: [], renvois: [] } };
}

function rule(theme: string, citation: string, page: number) {
  return {
    theme,
    objets: [],
    secteurs: [],
    exceptions: null,
    forme: 'qualitatif',
    valeur: null,
    unite: null,
    diviseur: null,
    minimum_m: null,
    conditions: null,
    mesure: null,
    resume: citation.slice(0, 80),
    citation,
    article: null,
    page,
    portee: 'generale',
  };
}

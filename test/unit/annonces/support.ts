import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Queryable } from '../../../db/client.ts';

/** Writes snapshots (objects, or raw text lines) as a JSON Lines file, gzipped when its name ends in .gz. */
export async function fichierReleves(dir: string, nom: string, lignes: Array<object | string>): Promise<string> {
  const texte = `${lignes.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`;
  const chemin = path.join(dir, nom);
  await writeFile(chemin, nom.endsWith('.gz') ? gzipSync(texte) : texte);
  return chemin;
}

/** The events of a listing, in write order. */
export async function evenementsDe(db: Queryable, annonceId: string, dataset = 'live') {
  const { rows } = await db.query<{ id: number; genre: string; le: Date; avant: any; apres: any }>(
    `SELECT id, genre, le, avant, apres FROM annonces_evenements WHERE dataset = $1 AND annonce_id = $2 ORDER BY id`,
    [dataset, annonceId],
  );
  return rows;
}

/** A listing by its portal identifier (`portal_a:123`). */
export async function annonceDuPortail(db: Queryable, idPortail: string, dataset = 'live') {
  const [portail, identifiant] = idPortail.split(/:(.*)/s);
  const { rows } = await db.query(`SELECT * FROM annonces WHERE dataset = $1 AND portail = $2 AND identifiant = $3`, [
    dataset,
    portail,
    identifiant,
  ]);
  return rows[0];
}

/** A flat of Paris 11e as portal_a writes it, with `extra` over it. */
export function appartement(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    portail: 'portal_a',
    id: '1001',
    lien: `https://www.portal-a.example/annonces/${String(extra.id ?? '1001')}`,
    vu_le: '2025-03-01T09:00:00Z',
    statut: 'actif',
    type: 'appartement',
    prix: 400_000,
    surface: 40,
    pieces: 2,
    chambres: 1,
    etage: 3,
    dpe: 'D',
    code_postal: '75011',
    insee: '75111',
    position: { lat: 48.8591, lon: 2.38 },
    precision: 'adresse',
    type_vendeur: 'pro',
    annonceur: { nom: 'AGENCE DU CANAL', siren: '552100554', mandat: 'exclusif', telephone: '01 43 00 00 00' },
    titre: 'T2 lumineux',
    description: 'Deux pièces au troisième étage, parquet, cave.',
    photos: ['https://img.portal-a.example/1001/1.jpg'],
    ...extra,
  };
}

import type { Db } from '../../db/client.ts';
import { distanceM } from '../../lib/geometrie.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { groups } from '../dvf/lines.ts';
import { normaliserNom } from './normaliser.ts';
import { rechercher } from './resoudre.ts';

/**
 * The measured accuracy of resoudre_adresse: street addresses of real sales geocoded as DVF writes them
 * (`27 B BD DE CHARONNE 75011 Paris 11e Arrondissement`), and the share whose first candidate is the street DVF
 * attached the sale to. DVF names that street by its FANTOIR code (adresse_code_voie), which the BAN import keeps as
 * `code_voie`: same commune and code, the right street. A code the BAN does not have in that commune (a street the
 * BAN renamed and gave an id of its own) is judged by distance: a first candidate within RAYON_JUSTE_M of the sale's
 * position (its parcel's centre) is taken for the right street.
 */

/** A sale's address, as DVF writes it. */
export interface AdresseVente {
  numero: number;
  /** As DVF writes it: B, T, Q, or a letter. */
  suffixe: string | null;
  voie: string;
  /** FANTOIR code of the street (4 characters). */
  code_voie: string;
  code_postal: string | null;
  insee: string;
  commune: string | null;
  lat: number | null;
  lon: number | null;
}

const RAYON_JUSTE_M = 60;

/** A street address of DVF: a number, a street name and a FANTOIR street code (not a lieu-dit's `B012`). */
export function estAdresseDeVoie(a: { numero: number | null; voie: string | null; code_voie: string | null }): boolean {
  return a.numero !== null && !!a.voie && !!a.code_voie && /^\d/.test(a.code_voie);
}

/** The query as DVF writes the address: number, index, street, postal code, commune. */
export function texteDvf(a: AdresseVente): string {
  return [`${a.numero}${a.suffixe ? ` ${a.suffixe}` : ''}`, a.voie, a.code_postal, a.commune].filter(Boolean).join(' ');
}

export interface Resultat {
  adresses: number;
  justes: number;
  /** Judged by distance (the BAN has not the DVF code in that commune). */
  parDistance: number;
  /** By street type as DVF writes it (`sans type` when it writes none). */
  parType: Array<{ type: string; adresses: number; justes: number }>;
  /**
   * Addresses whose only difficulty is the street type's abbreviation or the postal code: the DVF name reads as the
   * BAN's once normalised (same type, same words).
   */
  simples: { adresses: number; justes: number };
  /** The addresses missed (the first 200), with what was expected and what came first. */
  manquees: Array<{ q: string; attendu: string; obtenu: string | null }>;
}

interface Voie {
  insee: string;
  code_voie: string;
  voie: string;
  type_voie: string | null;
  nom_norm: string;
}

const CODE_VOIE = /^\d{1,4}$/;
/** DVF's street code as the BAN import writes it: 4 characters (`730` in the DVF API's export is `0730`). */
const codeVoie = (code: string) => (CODE_VOIE.test(code) ? code.padStart(4, '0') : code.toUpperCase());

/** Geocodes every address (one call at a time) and says how many came first on the right street. */
export async function mesurerPrecision(
  db: Db,
  dataset: Dataset,
  adresses: AdresseVente[],
  onProgress?: (faites: number) => void,
): Promise<Resultat> {
  const insees = [...new Set(adresses.map((a) => a.insee))];
  const { rows: voies } = await db.query<Voie>(
    `SELECT insee, code_voie, voie, type_voie, nom_norm FROM adresses
      WHERE dataset = $1 AND type = 'voie' AND insee = ANY ($2::text[])`,
    [dataset, insees],
  );
  const parCode = new Map(voies.map((v) => [`${v.insee}|${v.code_voie}`, v]));
  const codes = new Map<string, string | null>();
  const codeDe = async (cle: string) => {
    if (!codes.has(cle)) {
      const { rows } = await db.query<{ code_voie: string | null }>(
        'SELECT code_voie FROM adresses WHERE dataset = $1 AND cle_ban = $2',
        [dataset, cle],
      );
      codes.set(cle, rows[0]?.code_voie ?? null);
    }
    return codes.get(cle) ?? null;
  };
  const resultat: Resultat = {
    adresses: 0,
    justes: 0,
    parDistance: 0,
    parType: [],
    simples: { adresses: 0, justes: 0 },
    manquees: [],
  };
  const parType = new Map<string, { adresses: number; justes: number }>();
  for (const a of adresses) {
    const q = texteDvf(a);
    const [premier] = await rechercher(db, dataset, q, null, 1);
    const attendue = parCode.get(`${a.insee}|${codeVoie(a.code_voie)}`);
    let juste = false;
    if (premier && premier.insee === a.insee) {
      if (attendue) juste = premier.cle_ban !== null && (await codeDe(premier.cle_ban)) === attendue.code_voie;
      else if (a.lat !== null && a.lon !== null)
        juste = distanceM({ lat: a.lat, lon: a.lon }, premier) <= RAYON_JUSTE_M;
    }
    if (!attendue) resultat.parDistance++;
    const nom = normaliserNom(a.voie);
    const type = nom.type ?? 'sans type';
    const t = parType.get(type) ?? { adresses: 0, justes: 0 };
    parType.set(type, t);
    t.adresses++;
    resultat.adresses++;
    const simple = attendue && attendue.type_voie === nom.type && attendue.nom_norm === nom.mots.join(' ');
    if (simple) resultat.simples.adresses++;
    if (juste) {
      t.justes++;
      resultat.justes++;
      if (simple) resultat.simples.justes++;
    } else if (resultat.manquees.length < 200) {
      resultat.manquees.push({
        q,
        attendu: attendue ? `${attendue.voie} (${a.insee}, ${attendue.code_voie})` : `à moins de ${RAYON_JUSTE_M} m`,
        obtenu: premier ? `${premier.libelle} (${premier.insee})` : null,
      });
    }
    onProgress?.(resultat.adresses);
  }
  resultat.parType = [...parType.entries()]
    .map(([type, t]) => ({ type, ...t }))
    .sort((a, b) => b.adresses - a.adresses || a.type.localeCompare(b.type));
  return resultat;
}

const LETTRES: Record<string, string> = { bis: 'B', ter: 'T', quater: 'Q' };

/**
 * The street address of every imported sale of the dataset (its main address), as DVF wrote it: the repetition index
 * the importer reads as bis, ter, quater is written back as B, T, Q. The position is the file's, when it had one.
 */
export async function adressesDesVentes(db: Db, dataset: Dataset, insee?: string): Promise<AdresseVente[]> {
  const { rows } = await db.query<AdresseVente & { numero: number }>(
    `SELECT adresse_numero AS numero, adresse_suffixe AS suffixe, adresse_voie AS voie, code_voie, code_postal, insee,
            commune, CASE WHEN position_source = 'dvf' THEN lat END AS lat,
            CASE WHEN position_source = 'dvf' THEN lon END AS lon
       FROM dvf_mutations
      WHERE dataset = $1 AND adresse_numero IS NOT NULL AND adresse_voie IS NOT NULL AND code_voie ~ '^[0-9]'
        AND ($2::text IS NULL OR insee = $2)
      ORDER BY insee, code_voie, adresse_numero, id_mutation`,
    [dataset, insee ?? null],
  );
  return rows.map((r) => ({ ...r, suffixe: r.suffixe ? (LETTRES[r.suffixe] ?? r.suffixe.toUpperCase()) : null }));
}

/**
 * Every distinct street address of DVF files (Etalab or DGFiP, plain or gzipped), as DVF writes it, with the
 * position of its first sale there.
 */
export async function adressesDesFichiers(files: string[]): Promise<AdresseVente[]> {
  const vues = new Map<string, AdresseVente>();
  for (const file of files) {
    for await (const groupes of groups(
      file,
      () => {},
      () => {},
      { index: 0, of: 1 },
    )) {
      for (const l of groupes.flat()) {
        const a: AdresseVente = {
          numero: l.numero!,
          suffixe: l.suffixe ? (LETTRES[l.suffixe] ?? l.suffixe.toUpperCase()) : null,
          voie: l.voie!,
          code_voie: l.codeVoie!,
          code_postal: l.codePostal,
          insee: l.insee,
          commune: l.commune,
          lat: l.lat,
          lon: l.lon,
        };
        if (!estAdresseDeVoie(a)) continue;
        const cle = [a.insee, a.numero, a.suffixe, a.voie, a.code_postal].join('|');
        if (!vues.has(cle)) vues.set(cle, a);
      }
    }
  }
  return [...vues.values()];
}

import { API_PREFIX, signatureLien, verifierLien, type FileDelivery } from '../documents/telechargement.ts';
import { ApiError } from '../errors.ts';
import { cleFichier, type Perimetre } from './construire.ts';

/**
 * The links of the edition files: a pre-signed bucket address when the storage is S3, else a link of this API signed
 * like the generated documents' (domain/documents/telechargement.ts, under a tag of its own), served without key
 * until it expires.
 */

/** Validity of a download address (`duree_lien_s`). */
export const DUREE_LIEN_S = 900;

/** The route of the signed links under /api/v1. */
export const ROUTE_FICHIER_EXPORT = '/exports/fichiers/{perimetre}/{jeu}/{date}/{nom}';

const TAG = 'exports-v1';
const PERIMETRE = /^(contrat|echantillon)$/;
const JEU = /^[a-z_]{2,40}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const NOM = /^(donnees\.(parquet|csv\.gz)|dictionnaire\.json|fiche_qualite\.json)$/;

export interface FichierEdition {
  perimetre: Perimetre;
  jeu: string;
  date: string;
  /** The file's name in the edition's folder (donnees.parquet, dictionnaire.json…). */
  nom: string;
  contentType: string;
}

const parts = (f: Pick<FichierEdition, 'perimetre' | 'jeu' | 'date' | 'nom'>) => [f.perimetre, f.jeu, f.date, f.nom];

/** The address a client is sent to, valid until `expireLe`. */
export function adresseFichier(delivery: FileDelivery, fichier: FichierEdition, expireLe: Date, now: Date): string {
  const key = cleFichier(fichier.perimetre, fichier.jeu, fichier.date, fichier.nom);
  const disposition = `attachment; filename="${fichier.jeu}-${fichier.date}-${fichier.nom}"`;
  if (delivery.storage.presignGet) {
    return delivery.storage.presignGet(key, {
      // In whole seconds, as the bucket counts them from X-Amz-Date (the second of `now`).
      expiresS: Math.max(1, Math.floor(expireLe.getTime() / 1000) - Math.floor(now.getTime() / 1000)),
      contentDisposition: disposition,
      contentType: fichier.contentType,
      now,
    });
  }
  const expire = Math.floor(expireLe.getTime() / 1000);
  const signature = signatureLien(delivery.secret, TAG, parts(fichier), expire);
  const chemin = ROUTE_FICHIER_EXPORT.replace('{perimetre}', fichier.perimetre)
    .replace('{jeu}', fichier.jeu)
    .replace('{date}', fichier.date)
    .replace('{nom}', fichier.nom);
  return `${delivery.baseUrl ?? ''}${API_PREFIX}${chemin}?expire=${expire}&signature=${signature}`;
}

const invalide = () =>
  new ApiError('ressource_absente', 'Lien de téléchargement invalide : utilisez l’adresse que l’API a donnée.');

/** Serves a signed link of folder storage: the file's bytes, or the 404 of an altered, expired or purged link. */
export async function servirFichierExport(
  delivery: FileDelivery,
  params: Record<string, unknown>,
  now: Date,
): Promise<{ headers: Record<string, string>; body: Uint8Array | NodeJS.ReadableStream }> {
  const { perimetre, jeu, date, nom, expire, signature } = params;
  const texte = [perimetre, jeu, date, nom, expire, signature].every((v) => typeof v === 'string');
  if (!texte) throw invalide();
  const f = { perimetre, jeu, date, nom } as Record<string, string>;
  if (!PERIMETRE.test(f.perimetre!) || !JEU.test(f.jeu!) || !DATE.test(f.date!) || !NOM.test(f.nom!)) throw invalide();
  const restantS = verifierLien(
    delivery.secret,
    TAG,
    parts(f as unknown as FichierEdition),
    expire as string,
    signature as string,
    now,
    (expireLe) =>
      `Lien expiré le ${expireLe.toISOString()} : demandez une nouvelle adresse à GET /exports/{jeu}/{date}.`,
  );
  const cle = cleFichier(f.perimetre as Perimetre, f.jeu!, f.date!, f.nom!);
  // Streamed from the folder where it can be: an edition may be hundreds of megabytes.
  const ouvert = delivery.storage.open ? await delivery.storage.open(cle) : undefined;
  const fichier = ouvert === undefined ? await delivery.storage.get(cle) : null;
  if (!ouvert && !fichier) throw new ApiError('ressource_absente', 'Ce fichier d’édition n’est plus conservé.');
  return {
    headers: {
      'Content-Type': ouvert ? ouvert.contentType : fichier!.contentType,
      'Content-Length': String(ouvert ? ouvert.size : fichier!.bytes.byteLength),
      'Content-Disposition': `attachment; filename="${f.jeu}-${f.date}-${f.nom}"`,
      'Cache-Control': `private, max-age=${restantS}`,
      'X-Content-Type-Options': 'nosniff',
    },
    body: ouvert ? ouvert.stream : fichier!.bytes,
  };
}

/**
 * Delivery of generated files: stored under a random key, handed out as a signed, expiring download link. The link is
 * the only credential: `GET /api/v1/documents/fichiers/{id}/{nom}?expire=…&signature=…` needs no API key, so that a
 * browser, a mail client or a Hub conversation can open it; it is an HMAC-SHA256 of the id, the name and the expiry
 * under a server secret, compared in constant time, and worthless after `expire`.
 */
import { createHmac } from 'node:crypto';
import type { Config } from '../../lib/config.ts';
import { safeEqual } from '../../lib/crypto.ts';
import { storageFromConfig, type FileStorage } from '../../lib/storage.ts';
import { ApiError } from '../errors.ts';

export interface FileDelivery {
  storage: FileStorage;
  /** HMAC key of the links. */
  secret: string | Buffer;
  /** Absolute base of the links (PUBLIC_BASE_URL, without /api/v1), or null: links are paths from /api/v1. */
  baseUrl: string | null;
  /** Validity of a link, in seconds; the file is purged after it. */
  linkTtlS: number;
}

/** Path of the download route under /api/v1, `{id}` and `{nom}` being path parameters. */
export const DOWNLOAD_ROUTE = '/documents/fichiers/{id}/{nom}';
export const API_PREFIX = '/api/v1';
/** Storage prefix of generated documents. */
export const DOCUMENTS_PREFIX = 'documents';
/** A pre-signed bucket address only has to last the redirect. */
const REDIRECT_TTL_S = 60;

const ID = /^[A-Za-z0-9]{32}$/;
const NAME = /^[a-z0-9][a-z0-9-]{0,59}\.(?:pdf|docx)$/;
const EXPIRE = /^\d{1,12}$/;
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;

/** The links' own key, derived from the service's master secret so that no new secret has to be stored. */
export function deriveLinkSecret(masterSecret: string | Buffer): Buffer {
  return createHmac('sha256', masterSecret).update('svc/liens-de-telechargement/v1').digest();
}

export function fileDeliveryFromConfig(config: Config, masterSecret: string | Buffer): FileDelivery {
  return {
    storage: storageFromConfig(config),
    secret: deriveLinkSecret(masterSecret),
    baseUrl: config.PUBLIC_BASE_URL?.replace(/\/+$/, '') ?? null,
    linkTtlS: config.DOCUMENTS_LINK_TTL_S,
  };
}

export const storageKey = (id: string) => `${DOCUMENTS_PREFIX}/${id}`;

function signatureOf(secret: string | Buffer, id: string, nom: string, expire: number): string {
  return signatureLien(secret, 'v1', [id, nom], expire);
}

/**
 * The signature of a link to a stored file: an HMAC-SHA256 under the links' secret of a tag, the link's parts and its
 * expiry, one per line. Generated documents sign `v1` with their id and name; another kind of file (the exports) signs
 * a tag of its own, so that a link of one kind never opens a file of another.
 */
export function signatureLien(secret: string | Buffer, tag: string, parts: string[], expire: number): string {
  return createHmac('sha256', secret)
    .update([tag, ...parts, String(expire)].join('\n'))
    .digest('base64url');
}

/**
 * Checks a signed link: its signature (constant time) and its expiry. Returns the seconds it remains valid; an
 * altered link, or one past `expire`, is the 404 `ressource_absente` (`expiree` gives the expired one's detail).
 */
export function verifierLien(
  secret: string | Buffer,
  tag: string,
  parts: string[],
  expire: string,
  signature: string,
  now: Date,
  expiree: (expireLe: Date) => string,
): number {
  if (!EXPIRE.test(expire) || !SIGNATURE.test(signature)) throw invalid();
  const expireS = Number(expire);
  if (!safeEqual(signature, signatureLien(secret, tag, parts, expireS))) throw invalid();
  const remainingS = expireS - Math.floor(now.getTime() / 1000);
  if (remainingS <= 0) throw new ApiError('ressource_absente', expiree(new Date(expireS * 1000)));
  return remainingS;
}

/** The signed link of a stored file, valid until `expiresAt` (rounded down to the second). */
export function signedLink(delivery: FileDelivery, id: string, nom: string, expiresAt: Date): string {
  const expire = Math.floor(expiresAt.getTime() / 1000);
  const signature = signatureOf(delivery.secret, id, nom, expire);
  const path = `${API_PREFIX}${DOWNLOAD_ROUTE.replace('{id}', id).replace('{nom}', encodeURIComponent(nom))}`;
  return `${delivery.baseUrl ?? ''}${path}?expire=${expire}&signature=${signature}`;
}

export interface DownloadParams {
  id?: unknown;
  nom?: unknown;
  expire?: unknown;
  signature?: unknown;
}

export type DownloadResponse =
  { status: 200; headers: Record<string, string>; body: Uint8Array } | { status: 302; headers: Record<string, string> };

const invalid = () =>
  new ApiError('ressource_absente', 'Lien de téléchargement invalide : utilisez le lien tel que l’API l’a donné.');

/**
 * Answers a download: the bytes from a folder, a redirect to a short-lived pre-signed address from a bucket.
 * Every refusal is a 404 `ressource_absente` (a link that was never valid, one that has expired, a purged file), so
 * that the route tells nothing about which files exist; the detail says which case it is.
 */
export async function serveDownload(
  delivery: FileDelivery,
  params: DownloadParams,
  now: Date = new Date(),
): Promise<DownloadResponse> {
  const { id, nom, expire, signature } = params;
  if (typeof id !== 'string' || typeof nom !== 'string' || typeof expire !== 'string' || typeof signature !== 'string')
    throw invalid();
  if (!ID.test(id) || !NAME.test(nom)) throw invalid();
  const remainingS = verifierLien(
    delivery.secret,
    'v1',
    [id, nom],
    expire,
    signature,
    now,
    (expireLe) => `Lien expiré le ${expireLe.toISOString()} : générez le document à nouveau.`,
  );
  const pdf = nom.endsWith('.pdf');
  const contentType = pdf
    ? 'application/pdf'
    : 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
  // A PDF opens in the browser; a Word file is saved.
  const disposition = `${pdf ? 'inline' : 'attachment'}; filename="${nom}"`;
  const key = storageKey(id);
  if (delivery.storage.presignGet) {
    const location = delivery.storage.presignGet(key, {
      expiresS: Math.min(REDIRECT_TTL_S, remainingS),
      contentDisposition: disposition,
      contentType,
      now,
    });
    return { status: 302, headers: { Location: location, 'Cache-Control': 'no-store' } };
  }
  const file = await delivery.storage.get(key);
  if (!file) throw new ApiError('ressource_absente', 'Ce fichier n’est plus conservé : générez le document à nouveau.');
  return {
    status: 200,
    headers: {
      'Content-Type': contentType,
      'Content-Length': String(file.bytes.byteLength),
      'Content-Disposition': disposition,
      'Cache-Control': `private, max-age=${remainingS}`,
      'X-Content-Type-Options': 'nosniff',
    },
    body: file.bytes,
  };
}

/**
 * Removes the generated files whose link has expired (folder storage; a bucket uses a lifecycle rule on the
 * `documents/` prefix instead). Returns how many were removed. Meant to run periodically, e.g. hourly.
 */
export async function purgeExpiredFiles(delivery: FileDelivery, now: Date = new Date()): Promise<number> {
  if (!delivery.storage.list) return 0;
  const limit = now.getTime() - delivery.linkTtlS * 1000;
  let removed = 0;
  for await (const { key, modifiedAt } of delivery.storage.list(DOCUMENTS_PREFIX)) {
    if (modifiedAt.getTime() < limit) {
      await delivery.storage.delete(key);
      removed++;
    }
  }
  return removed;
}

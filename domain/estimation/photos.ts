/**
 * The photos of estimer_bien_affine, from the customer's links to what the model sees. A link comes from whoever
 * calls, and decoding an image is the dearest thing the service does for it, so every check that can refuse without
 * decoding runs first, for every link, and a refusal stops at the first step that refused anything:
 *
 * 1. without the network, in the api before any task (`verifierLiens`): https, no credentials, a literal address or a
 *    loopback name, the same link twice. No name is resolved here: a customer's name is only ever resolved to fetch
 *    it, never to word a refusal (a lookup of `https://<data>.attacker.example/` is a message to the attacker);
 * 2. every link fetched at once (`chargerPhotos`, in the worker): name and every address public, status 200,
 *    PHOTO_MAX_OCTETS at most, JPEG, PNG or WebP by the first bytes;
 * 3. every header read: width × height at most PHOTO_MAX_PIXELS, read from the header, no pixel decoded;
 * 4. only then the decoding, at most DECODAGES_PAR_ORGANISATION at a time per organisation in the worker process.
 *
 * Every host the service will not or cannot reach reads the same to the customer (private, reserved, loopback, a
 * name that does not resolve, a connection refused): the difference is in the server's log (`journal`) only. A photo
 * is fetched once, re-encoded without its metadata, given to the model and forgotten: never written anywhere.
 */
import sharp from 'sharp';
import { OutboundError, type OutboundHttp } from '../../lib/outbound-http.ts';

export const MAX_PHOTOS = 12;
/** 1.6 MB, in bytes, per photo as served (before re-encoding). */
export const PHOTO_MAX_OCTETS = 1_600_000;
/** Longest side of a photo as the model sees it. */
export const PHOTO_COTE_MAX = 1024;
/**
 * Pixels of a photo as its header declares them: a 24 Mpx camera (6 000 × 4 000) passes. A PNG of 6 300 × 6 300 in
 * 16-bit RGBA weighs 0.3 MB compressed and a second of CPU or more to decode: its size in bytes says nothing of it.
 */
export const PHOTO_MAX_PIXELS = 25_000_000;
/** Photos of one organisation decoded at once in one worker process; the others wait their turn. */
export const DECODAGES_PAR_ORGANISATION = 2;
/**
 * What a refused request counts in its organisation's per-minute rate, on top of itself: one call per link fetched
 * and one per started million pixels decoded (about 10 to 25 ms of CPU each).
 */
export const PIXELS_PAR_APPEL = 1_000_000;
const PHOTO_DELAI_MS = 10_000;

const mpx = (pixels: number) => (pixels / 1_000_000).toLocaleString('fr-FR', { maximumFractionDigits: 1 });
const entier = (n: number) => n.toLocaleString('fr-FR');

/** One refused photo: the request field and why, in words for the customer. */
export interface PhotoRefus {
  champ: string;
  message: string;
}

/** Photos that cannot be read: the request is refused field by field, nothing is debited. */
export class PhotosRefusees extends Error {
  readonly refus: PhotoRefus[];
  /** Calls' worth of work the refusal cost the service, to count in the organisation's rate (0: nothing fetched). */
  readonly appels: number;
  /** What the customer is not told (addresses, resolver errors), one line per refused photo: for the server's log. */
  readonly journal: string[];
  constructor(refus: PhotoRefus[], travail: { appels?: number; journal?: string[] } = {}) {
    super(refus.map((r) => `${r.champ} : ${r.message}`).join('\n'));
    this.name = 'PhotosRefusees';
    this.refus = refus;
    this.appels = travail.appels ?? 0;
    this.journal = travail.journal ?? [];
  }
}

/** A photo as the model sees it: JPEG, at most PHOTO_COTE_MAX px, without metadata. Never written anywhere. */
export interface PhotoPreparee {
  mime: 'image/jpeg';
  base64: string;
}

const champ = (i: number) => `photos[${i}]`;
const injoignable = (i: number) => `La photo n° ${i + 1} n’est pas joignable (adresse publique https attendue).`;

/** A link the service does not fetch, for its customer (the form of the address) and for the log (why). */
function refusLien(i: number, error: OutboundError): { refus: PhotoRefus; journal: string } {
  const message =
    error.reason === 'url_invalide' || error.reason === 'schema_interdit'
      ? `La photo n° ${i + 1} : ${error.message}`
      : injoignable(i);
  return { refus: { champ: champ(i), message }, journal: `${champ(i)} ${error.reason} : ${error.detail}` };
}

/**
 * Step 1: what can be refused without the network, for every link (`resolve: false`: no name is looked up).
 * Throws PhotosRefusees when a link is refused; nothing was fetched, nothing is counted.
 */
export async function verifierLiens(urls: string[], outbound: Pick<OutboundHttp, 'checkUrl'>): Promise<void> {
  const refus: PhotoRefus[] = [];
  const journal: string[] = [];
  const premier = new Map<string, number>();
  for (const [i, url] of urls.entries()) {
    const avant = premier.get(url);
    if (avant !== undefined) {
      refus.push({
        champ: champ(i),
        message: `La photo n° ${i + 1} a le même lien que photos[${avant}] : chaque photo n’est lue qu’une fois.`,
      });
      continue;
    }
    premier.set(url, i);
    try {
      await outbound.checkUrl(url, { resolve: false });
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      const r = refusLien(i, error);
      refus.push(r.refus);
      journal.push(r.journal);
    }
  }
  if (refus.length > 0) throw new PhotosRefusees(refus, { journal });
}

type Etape<T> = { ok: true; valeur: T } | { ok: false; refus: PhotoRefus; journal: string };
const refuse = <T>(i: number, message: string, journal = message): Etape<T> => ({
  ok: false,
  refus: { champ: champ(i), message },
  journal: `${champ(i)} : ${journal}`,
});

/** Step 2 for one link: fetched once, checked by its status, its size and its first bytes. */
async function telecharger(
  url: string,
  i: number,
  deps: { outbound: OutboundHttp; signal?: AbortSignal },
): Promise<Etape<Buffer>> {
  let res;
  try {
    res = await deps.outbound.request({
      method: 'GET',
      url,
      headers: { accept: 'image/jpeg, image/png, image/webp' },
      maxBytes: PHOTO_MAX_OCTETS,
      timeoutMs: PHOTO_DELAI_MS,
      signal: deps.signal,
    });
  } catch (error) {
    if (!(error instanceof OutboundError)) throw error;
    if (error.reason === 'trop_lourd') {
      return refuse(
        i,
        `La photo n° ${i + 1} est plus lourde que 1,6 Mo (${entier(PHOTO_MAX_OCTETS)} octets) : refusée.`,
      );
    }
    if (error.reason === 'delai') {
      return refuse(i, `La photo n° ${i + 1} n’a pas été reçue en ${PHOTO_DELAI_MS / 1000} s.`, error.detail);
    }
    const r = refusLien(i, error);
    return { ok: false, ...r };
  }
  if (res.status >= 300 && res.status < 400) {
    return refuse(
      i,
      `Le lien de la photo n° ${i + 1} répond par une redirection (HTTP ${res.status}), qui n’est pas suivie : donnez le lien direct de l’image.`,
    );
  }
  if (res.status !== 200) {
    return refuse(i, `La photo n° ${i + 1} est inaccessible : le serveur a répondu HTTP ${res.status}.`);
  }
  if (res.sniffedType !== 'jpeg' && res.sniffedType !== 'png' && res.sniffedType !== 'webp') {
    return refuse(
      i,
      `Le lien de la photo n° ${i + 1} ne donne pas une image JPEG, PNG ou WebP (format reconnu aux octets, pas à l’extension).`,
    );
  }
  return { ok: true, valeur: res.body };
}

/** Step 3 for one photo: its dimensions as its header declares them; libvips reads no pixel for it. */
async function lireEntete(octets: Buffer, i: number): Promise<Etape<number>> {
  let largeur: number;
  let hauteur: number;
  try {
    ({ width: largeur, height: hauteur } = await sharp(octets).metadata());
  } catch {
    return refuse(i, `La photo n° ${i + 1} est illisible (en-tête d’image corrompu ou tronqué).`);
  }
  const pixels = largeur * hauteur;
  if (!(pixels > 0)) return refuse(i, `La photo n° ${i + 1} est illisible (dimensions absentes de son en-tête).`);
  if (pixels > PHOTO_MAX_PIXELS) {
    return refuse(
      i,
      `La photo n° ${i + 1} fait ${entier(largeur)} × ${entier(hauteur)} pixels (${mpx(pixels)} Mpx) : ${mpx(PHOTO_MAX_PIXELS)} Mpx au plus ; réduisez-la avant de l’envoyer.`,
    );
  }
  return { ok: true, valeur: pixels };
}

let decodages = 0;
/** Decodings started by this process since it started: how a test sees that a refusal decoded nothing. */
export function decodagesCommences(): number {
  return decodages;
}

/** Step 4 for one photo: upright by its EXIF orientation, reduced, re-encoded without any metadata. */
async function decoder(octets: Buffer, i: number): Promise<Etape<PhotoPreparee>> {
  decodages += 1;
  try {
    // sharp writes no metadata unless asked (no EXIF, GPS, ICC); the pixel bound is set again should a header lie.
    const jpeg = await sharp(octets, { limitInputPixels: PHOTO_MAX_PIXELS, failOn: 'error' })
      .rotate()
      .resize({ width: PHOTO_COTE_MAX, height: PHOTO_COTE_MAX, fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#ffffff' })
      .jpeg({ quality: 80 })
      .toBuffer();
    return { ok: true, valeur: { mime: 'image/jpeg', base64: jpeg.toString('base64') } };
  } catch (error) {
    return refuse(
      i,
      `La photo n° ${i + 1} est illisible (fichier corrompu ou tronqué).`,
      `décodage : ${(error as Error).message}`,
    );
  }
}

/** The refusals of one step, or its values when every photo passed it. */
function bilan<T>(etapes: Etape<T>[], appels: number): T[] {
  const refusees = etapes.filter((e): e is Extract<Etape<T>, { ok: false }> => !e.ok);
  if (refusees.length > 0) {
    throw new PhotosRefusees(
      refusees.map((e) => e.refus),
      { appels, journal: refusees.map((e) => e.journal) },
    );
  }
  return etapes.map((e) => (e as Extract<Etape<T>, { ok: true }>).valeur);
}

/**
 * Steps 2 to 4 (step 1 ran in the api): every photo fetched once, at once, then every header read, then every photo
 * decoded under the organisation's share of decodings. Any refused: all the refusals of that step together, nothing
 * decoded past it, nothing given to the model (PhotosRefusees, which says what the work cost in calls).
 */
export async function chargerPhotos(
  urls: string[],
  deps: {
    outbound: OutboundHttp;
    organisationId: string;
    decodages: LimiteurParCle;
    signal?: AbortSignal;
  },
): Promise<PhotoPreparee[]> {
  const octets = bilan(await Promise.all(urls.map((url, i) => telecharger(url, i, deps))), urls.length);
  const pixels = bilan(await Promise.all(octets.map((o, i) => lireEntete(o, i))), urls.length);
  let decodes = 0;
  const photos = await Promise.all(
    octets.map((o, i) =>
      deps.decodages(
        deps.organisationId,
        () => {
          decodes += pixels[i];
          return decoder(o, i);
        },
        deps.signal,
      ),
    ),
  );
  return bilan(photos, urls.length + Math.ceil(decodes / PIXELS_PAR_APPEL));
}

// ---------------------------------------------------------------------------------------------------------------------
// A share of the worker per organisation.
// ---------------------------------------------------------------------------------------------------------------------

/**
 * At most `parCle` pieces of work at once per key (here: decodings per organisation), first come first served within
 * a key, keys independent of each other. sharp runs each decoding on one of libuv's four threads: without this, the
 * dozens of photos of one customer fill the threads' queue and another customer's one photo waits behind all of them.
 * In-process: each worker process gives each organisation its own share.
 */
export function createLimiteurParCle(parCle: number) {
  const files = new Map<string, { actifs: number; attente: Array<() => void> }>();
  return async function limiter<T>(cle: string, travail: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    let file = files.get(cle);
    if (!file) {
      file = { actifs: 0, attente: [] };
      files.set(cle, file);
    }
    const f = file;
    if (f.actifs < parCle) f.actifs += 1;
    else {
      // The place is handed over by the one who leaves it (see below), never taken back by a newcomer meanwhile.
      await new Promise<void>((resolve, reject) => {
        const entrer = () => {
          signal?.removeEventListener('abort', abandonner);
          resolve();
        };
        const abandonner = () => {
          f.attente.splice(f.attente.indexOf(entrer), 1);
          reject(signal?.reason);
        };
        f.attente.push(entrer);
        signal?.addEventListener('abort', abandonner, { once: true });
      });
    }
    try {
      return await travail();
    } finally {
      const suivant = f.attente.shift();
      if (suivant) suivant();
      else if (--f.actifs === 0) files.delete(cle);
    }
  };
}

export type LimiteurParCle = ReturnType<typeof createLimiteurParCle>;

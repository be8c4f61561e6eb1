import { createHmac, timingSafeEqual } from 'node:crypto';

/** Header carrying the signature of a delivery. */
export const SIGNATURE_HEADER = 'Svc-Signature';
/** Deliveries older (or further in the future) than this are refused by a verifier: replay protection. */
export const DEFAULT_TOLERANCE_S = 300;

function hmacHex(secret: string, timestampSeconds: number, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestampSeconds}.`).update(rawBody).digest('hex');
}

/**
 * Value of `Svc-Signature` for one attempt: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`. Each attempt
 * signs afresh with its own timestamp, so a retry hours later still passes the receiver's tolerance window.
 */
export function signDelivery(secret: string, rawBody: string | Buffer, timestampSeconds: number): string {
  const t = Math.floor(timestampSeconds);
  return `t=${t},v1=${hmacHex(secret, t, rawBody)}`;
}

/**
 * What we ask subscribers to do, Stripe-style: true when one `v1` of the header is the HMAC of `<t>.<raw body>` and `t`
 * is within `toleranceS` of `now`. Several `v1` are accepted so that a secret rotation can sign with both secrets.
 */
export function verifySignature(
  secret: string,
  rawBody: string | Buffer,
  header: string | null | undefined,
  toleranceS: number = DEFAULT_TOLERANCE_S,
  now: Date = new Date(),
): boolean {
  if (!header) return false;
  let timestamp: number | null = null;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) candidates.push(value);
  }
  if (timestamp === null || candidates.length === 0) return false;
  if (Math.abs(now.getTime() / 1000 - timestamp) > toleranceS) return false;
  const expected = Buffer.from(hmacHex(secret, timestamp, rawBody), 'hex');
  return candidates.some((c) => timingSafeEqual(Buffer.from(c, 'hex'), expected));
}

/** The `signature` field returned at creation: how to verify a delivery, step by step. */
export const SIGNATURE_GUIDE = [
  'Chaque livraison est un POST JSON signé dans l’en-tête Svc-Signature, de la forme t=<horodatage>,v1=<signature>. Pour la vérifier :',
  '1. Lisez le corps brut de la requête, octet pour octet, avant tout décodage JSON (un corps ré-encodé ne correspond plus).',
  '2. Découpez Svc-Signature sur les virgules, puis chaque élément sur son premier « = » : t est l’horodatage en secondes Unix, v1 la signature (plusieurs v1 peuvent figurer : une seule suffit).',
  '3. Formez le texte signé : la valeur de t, un point, puis le corps brut, soit « <t>.<corps> ».',
  '4. Calculez le HMAC-SHA256 de ce texte avec pour clé ce secret tout entier (préfixe whsec_ compris, en UTF-8) et écrivez-le en hexadécimal minuscule.',
  '5. Comparez-le à chaque v1 en temps constant (crypto.timingSafeEqual en Node.js, hmac.compare_digest en Python, hash_equals en PHP) ; sans égalité, refusez la livraison.',
  '6. Refusez-la aussi si t s’écarte de plus de 5 minutes de votre horloge : une livraison interceptée ne peut pas être rejouée plus tard. Chaque tentative est signée à nouveau, avec un t récent.',
  '7. Dédoublonnez avec l’en-tête Svc-Livraison (le champ id du corps) : il reste le même d’une tentative à l’autre.',
  '8. Répondez 2xx en moins de 10 secondes, avant tout traitement long ; toute autre réponse, une redirection ou un silence est un échec, retenté 1 min, 5 min, 30 min, 2 h puis 12 h plus tard. 50 échecs consécutifs coupent l’abonnement ; un test réussi (POST /webhooks/{id}/test) le rétablit.',
  'Gardez ce secret côté serveur : il n’est montré qu’une fois. En cas de fuite, supprimez l’abonnement et créez-en un autre.',
].join('\n');

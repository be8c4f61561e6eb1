import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Unbiased random text over [0-9A-Za-z]; 32 characters carry about 190 bits. */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 * 62: rejecting above it keeps every character equally likely.
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function sha256(text: string | Buffer): Buffer {
  return createHash('sha256').update(text).digest();
}

export function sha256Hex(text: string | Buffer): string {
  return sha256(text).toString('hex');
}

export function hmacSha256Hex(secret: string | Buffer, text: string | Buffer): string {
  return createHmac('sha256', secret).update(text).digest('hex');
}

/** Constant-time equality of two texts, whatever their lengths. */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

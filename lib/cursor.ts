import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Opaque pagination cursors: base64url(JSON) + "." + HMAC. A client can neither read the position in a meaningful
 * way nor forge or alter it; a cursor is also bound to the operation and the filters it was issued for.
 */
export function createCursors(secret: string) {
  const sign = (payload: string) => createHmac('sha256', secret).update(payload).digest('base64url').slice(0, 22);
  return {
    encode(scope: string, position: unknown): string {
      const payload = Buffer.from(JSON.stringify({ s: scope, p: position })).toString('base64url');
      return `${payload}.${sign(payload)}`;
    },
    /** The position, or null when the cursor is malformed, tampered with or issued for another scope. */
    decode<T>(scope: string, cursor: string): T | null {
      const dot = cursor.lastIndexOf('.');
      if (dot <= 0) return null;
      const payload = cursor.slice(0, dot);
      const given = Buffer.from(cursor.slice(dot + 1));
      const expected = Buffer.from(sign(payload));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
      try {
        const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { s: string; p: T };
        return parsed.s === scope ? parsed.p : null;
      } catch {
        return null;
      }
    },
  };
}

export type Cursors = ReturnType<typeof createCursors>;

import { crc32, deflateSync } from 'node:zlib';

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/**
 * A PNG of `largeur` × `hauteur` pixels in 16-bit RGBA whose header is true and whose pixel data stops after `lignes`
 * rows of zeros: what a header-only check reads as the image it claims to be, for the price of a few bytes. Decoding
 * it fails (truncated), after libvips has started on it.
 */
export function pngTronque(largeur: number, hauteur: number, lignes = 4): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(largeur, 0);
  ihdr.writeUInt32BE(hauteur, 4);
  ihdr[8] = 16; // bits per sample
  ihdr[9] = 6; // RGBA
  const rows = Buffer.alloc(Math.min(lignes, hauteur) * (1 + largeur * 8));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

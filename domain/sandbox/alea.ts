import { mulberry32 } from '../../lib/random.ts';

/** FNV-1a: the label of a stream of draws, hashed into its seed. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * Draws of one labelled stream. Each commune and each file draws from streams of its own, so that adding draws to
 * one part of the generator leaves the other files as they were.
 */
export class Alea {
  readonly #next: () => number;

  constructor(seed: number, label: string) {
    this.#next = mulberry32((seed ^ fnv1a(label)) >>> 0);
  }

  next(): number {
    return this.#next();
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  between(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T {
    const total = items.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [item, w] of items) {
      r -= w;
      if (r < 0) return item;
    }
    return items[items.length - 1][0];
  }

  /** A standard normal draw (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  /** A day in [from, to] (AAAA-MM-JJ). */
  day(from: string, to: string): string {
    const a = Date.parse(`${from}T00:00:00Z`) / 86_400_000;
    const b = Date.parse(`${to}T00:00:00Z`) / 86_400_000;
    return isoDay(this.int(a, b));
  }
}

function isoDay(days: number): string {
  return new Date(days * 86_400_000).toISOString().slice(0, 10);
}

export function plusJours(iso: string, jours: number): string {
  return isoDay(Date.parse(`${iso}T00:00:00Z`) / 86_400_000 + jours);
}

export function plusAns(iso: string, ans: number): string {
  return `${Number(iso.slice(0, 4)) + ans}${iso.slice(4)}`;
}

import { createRequire } from 'node:module';

/** A commune of the administrative split, as the benchmarks draw them. */
export interface CommuneReelle {
  code: string;
  nom: string;
  cp: string;
  departement: string;
}

/**
 * `n` real communes of metropolitan France outside Alsace-Moselle (whose sales DVF does not publish), every k-th by
 * code so that they spread over the country: the benchmarks give them made-up centres and streets.
 */
export function communesReelles(n: number): CommuneReelle[] {
  const require = createRequire(import.meta.url);
  const all = (
    require('@etalab/decoupage-administratif/data/communes.json') as Array<{
      code: string;
      nom: string;
      type: string;
      zone: string;
      departement?: string;
      codesPostaux?: string[];
    }>
  ).filter(
    (c) =>
      c.type === 'commune-actuelle' &&
      c.zone === 'metro' &&
      c.codesPostaux?.length &&
      !['57', '67', '68'].includes(c.departement ?? ''),
  );
  const step = Math.floor(all.length / n);
  return Array.from({ length: n }, (_, i) => {
    const c = all[i * step]!;
    return { code: c.code, nom: c.nom, cp: c.codesPostaux![0]!, departement: c.departement! };
  });
}

import { windows1252, type SandboxPart } from '../part.ts';
import type { InseeSandbox } from '../territoire.ts';

/**
 * The A/B/C zoning in the layout of the national list (`CODGEO;REG;DEP;LIBGEO;Zone en vigueur depuis le 5 juillet
 * 2024;Reclassement juillet 2024`, Windows-1252, CRLF). The zones are the real ones of the edition in force since
 * 5 July 2024: a decree's, nothing to draw, so the file is the same for every seed. Like the national list, it names
 * Paris (75056), not its 11th arrondissement: the read gives the arrondissement its commune's zone.
 */

const ENTETE = 'CODGEO;REG;DEP;LIBGEO;Zone en vigueur depuis le 5 juillet 2024;Reclassement juillet 2024';

/** By commune of the sandbox: the line of the commune the list names. */
const LIGNES: Record<InseeSandbox, string> = {
  '33234': '33234;75;33;Latresne;B1;Non',
  '33001': '33001;75;33;Abzac;C;Non',
  '75111': '75056;11;75;Paris;Abis;Non',
  '59350': '59350;32;59;Lille;A;Non',
  '67482': '67482;44;67;Strasbourg;A;Non',
};

export const zonageAbcPart: SandboxPart<'zonage-abc'> = {
  source: 'zonage-abc',
  fichiers: () => [
    ['zonage-abc-juillet-2024.csv', windows1252(`${[ENTETE, ...Object.values(LIGNES).sort()].join('\r\n')}\r\n`)],
  ],
};

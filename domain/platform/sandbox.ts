/**
 * The frozen sandbox territory served to pk_test_ keys: real communes (INSEE codes). An entry outside it answers
 * 403 hors_bac_a_sable. Strasbourg is the Alsace-Moselle case (no DVF).
 */
/** The data a key reads and an importer writes: the live data, or the frozen sandbox of pk_test_ keys. */
export type Dataset = 'live' | 'sandbox';

export const SANDBOX_COMMUNES = ['33234', '33001', '75111', '59350', '67482'] as const;

export function inSandboxCommunes(insee: string): boolean {
  return (SANDBOX_COMMUNES as readonly string[]).includes(insee);
}

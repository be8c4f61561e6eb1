import type { Territoire } from '../catalogue.ts';
import { communeByCode } from '../communes.ts';

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

let bounds: { departements: Set<string>; regions: Set<string>; codesPostaux: Set<string> } | undefined;

/** The départements, régions and postal codes of the sandbox's communes, read once from the administrative split. */
function sandboxBounds() {
  if (!bounds) {
    const communes = SANDBOX_COMMUNES.map((insee) => communeByCode(insee)).filter((c) => c !== null);
    bounds = {
      departements: new Set(communes.map((c) => c.departement)),
      regions: new Set(communes.map((c) => c.region)),
      codesPostaux: new Set(communes.flatMap((c) => c.codesPostaux)),
    };
  }
  return bounds;
}

/** Why a territory is outside the sandbox, as the refusal says it, or null when it is inside. */
export function outsideSandbox(territoire: Territoire): string | null {
  const b = sandboxBounds();
  // A code that is no commune is not outside the sandbox but unknown: the operation says so as for any key.
  if ('commune' in territoire) {
    const code = territoire.commune.toUpperCase();
    return inSandboxCommunes(code) || !communeByCode(code) ? null : `La commune ${territoire.commune}`;
  }
  if ('iris' in territoire) {
    const code = territoire.iris.slice(0, 5).toUpperCase();
    return inSandboxCommunes(code) || !communeByCode(code) ? null : `L’IRIS ${territoire.iris}`;
  }
  if ('code_postal' in territoire) {
    return b.codesPostaux.has(territoire.code_postal) ? null : `Le code postal ${territoire.code_postal}`;
  }
  if ('departement' in territoire) {
    return b.departements.has(territoire.departement.toUpperCase()) ? null : `Le département ${territoire.departement}`;
  }
  return b.regions.has(territoire.region) ? null : `La région ${territoire.region}`;
}

import { z } from 'zod';
import { defineOperation, type Operation } from '../../domain/catalogue.ts';
import { ApiError } from '../../domain/errors.ts';

/**
 * A small catalogue of its own that exercises the generic pipeline: every rule shown on it holds for every operation.
 * Tool names end in `_<nom>` and paths start with `/<racine>/`, so that two suites can register it side by side.
 */
export function operationsEssai(nom: string, racine: string) {
  const echo = defineOperation({
    tool: `echo_${nom}`,
    method: 'GET',
    path: `/${racine}/echo/{id}`,
    summary: 'Écho',
    description: 'Renvoie son entrée.',
    credits: 2,
    unit: 'appel',
    scope: 'territoire',
    tier: 'usage',
    sandbox: true,
    cacheS: 0,
    timeoutS: 2,
    input: z.object({ id: z.string().min(3), n: z.coerce.number().int().min(0).max(1000).default(1) }),
    output: z.object({ id: z.string(), n: z.number() }),
    async handler(input, ctx) {
      if (input.id === 'absent') throw new ApiError('ressource_absente', 'Rien ici.');
      if (ctx.caller.sandbox && !input.id.startsWith('gel'))
        throw new ApiError('hors_bac_a_sable', 'Hors du jeu figé.');
      return { id: input.id, n: input.n };
    },
  });
  const ecrire = defineOperation({
    tool: `ecrire_${nom}`,
    method: 'POST',
    path: `/${racine}/ecrire`,
    summary: 'Écrire',
    description: 'Accepte un corps.',
    credits: 1,
    unit: 'appel',
    scope: 'territoire',
    tier: 'usage',
    sandbox: false,
    cacheS: 0,
    timeoutS: 2,
    input: z.object({ texte: z.string().min(2), nombre: z.number().int().optional() }).strict(),
    output: z.object({ longueur: z.number() }),
    handler: async (input) => ({ longueur: input.texte.length }),
  });
  const liste = defineOperation({
    tool: `liste_${nom}`,
    method: 'GET',
    path: `/${racine}/liste`,
    summary: 'Liste',
    description: 'Renvoie n éléments.',
    credits: 1,
    unit: 'element',
    scope: 'territoire',
    tier: 'usage',
    sandbox: true,
    cacheS: 0,
    timeoutS: 2,
    input: z.object({ n: z.coerce.number().int().min(0).max(50) }),
    output: z.object({ donnees: z.array(z.number()) }),
    units: (out: { donnees: number[] }) => out.donnees.length,
    handler: async (input: { n: number }) => ({ donnees: Array.from({ length: input.n }, (_, i) => i) }),
  });
  const lent = defineOperation({
    ...ecrire,
    tool: `lent_${nom}`,
    path: `/${racine}/lent`,
    timeoutS: 0.2,
    input: z.object({}),
    territoires: undefined,
    handler: (_input, ctx) =>
      new Promise<{ longueur: number }>((resolve) => {
        const t = setTimeout(() => resolve({ longueur: 0 }), 5000);
        ctx.signal.addEventListener('abort', () => clearTimeout(t));
      }),
  });
  const panne = defineOperation({
    ...ecrire,
    tool: `panne_${nom}`,
    path: `/${racine}/panne`,
    input: z.object({}),
    territoires: undefined,
    handler: async () => {
      throw new Error('connexion à postgres://admin:motdepasse@10.0.0.3 refusée');
    },
  });
  const contrat = defineOperation({
    ...echo,
    tool: `contrat_${nom}`,
    path: `/${racine}/contrat/{id}`,
    tier: 'contrat',
  });
  const personnel = defineOperation({
    ...echo,
    tool: `personnel_${nom}`,
    path: `/${racine}/personnel/{id}`,
    credits: 0,
    scope: 'compte',
    personalKey: true,
  });
  return {
    echo,
    ecrire,
    liste,
    lent,
    panne,
    contrat,
    personnel,
    toutes: [echo, ecrire, liste, lent, panne, contrat, personnel] as Operation[],
  };
}

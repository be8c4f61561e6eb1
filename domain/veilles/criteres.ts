import { z } from 'zod';
import { CHAMPS_FILTRES, passeFiltres, PRIX_ORDONNES, type LieuAnnonce } from '../webhooks/operations.ts';

const borne = (description: string) => z.number().min(0, 'Valeur positive ou nulle attendue.').describe(description);

/**
 * The criteria of a watch: the filters of a webhook subscription (place, type, price), plus surface, score and gross
 * yield bounds. At least one place: a watch over all of France would be the feed itself (GET /flux/annonces).
 */
export const CriteresSchema = z
  .strictObject({
    ...CHAMPS_FILTRES,
    surface_min: borne('Surface habitable minimale (m²).').optional(),
    surface_max: borne('Surface habitable maximale (m²).').optional(),
    score_min: z.number().min(0).max(100, 'Score sur 100.').optional().describe('Score d’analyse minimal (0-100).'),
    rendement_min: z
      .number()
      .min(0)
      .max(100, 'Pourcentage attendu.')
      .optional()
      .describe('Rendement brut minimal de l’analyse, en %.'),
  })
  .refine((c) => c.insee || c.cp || c.departement, {
    message: 'Au moins un lieu : insee, cp ou departement.',
    path: ['insee'],
  })
  .refine(...PRIX_ORDONNES)
  .refine((c) => c.surface_min === undefined || c.surface_max === undefined || c.surface_min <= c.surface_max, {
    message: 'surface_max doit être supérieure ou égale à surface_min.',
    path: ['surface_max'],
  })
  .describe('Critères combinés par ET ; les valeurs d’une liste par OU.');
export type Criteres = z.infer<typeof CriteresSchema>;

/** What the criteria read of a listing as it is now. */
export interface AnnonceCriteres extends LieuAnnonce {
  surface: number | null;
  score: number | null;
  rendement_brut: number | null;
}

/** Every criterion given must pass; an unknown value passes no bound on it. */
export function passeCriteres(c: Criteres, a: AnnonceCriteres): boolean {
  const auMoins = (min: number | undefined, v: number | null) => min === undefined || (v !== null && v >= min);
  const auPlus = (max: number | undefined, v: number | null) => max === undefined || (v !== null && v <= max);
  return (
    passeFiltres(c, a) &&
    auMoins(c.surface_min, a.surface) &&
    auPlus(c.surface_max, a.surface) &&
    auMoins(c.score_min, a.score) &&
    auMoins(c.rendement_min, a.rendement_brut)
  );
}

import { z } from 'zod';

/** The communes DVF splits into municipal arrondissements: read by arrondissement. */
export const ARRONDISSEMENTS: Record<string, string> = {
  '75056': 'Paris : 75101 à 75120',
  '69123': 'Lyon : 69381 à 69389',
  '13055': 'Marseille : 13201 à 13216',
};

export const Insee = z
  .string()
  .transform((v) => v.trim().toUpperCase())
  .pipe(z.string().regex(/^(?:\d{2}|2[AB])\d{3}$/, 'Code INSEE de commune : 5 caractères (2A/2B en Corse).'))
  .describe('Code INSEE de la commune ou de l’arrondissement municipal (5 caractères, 2A/2B en Corse).');

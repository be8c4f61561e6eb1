import { adresseOperations } from './adresses/resoudre.ts';
import type { Operation } from './catalogue.ts';
import { compteOperations } from './compte/operations.ts';
import { lireDocument } from './documents/lire-operation.ts';
import { documentOperations } from './documents/operations.ts';
import { faitsAdresse } from './dpe/faits.ts';
import { estimationOperations } from './estimation/operations.ts';
import { HUB_OPERATIONS } from './hub/operations.ts';
import { marcheOperations } from './marche/operations.ts';
import { dvfOperations } from './dvf/operations.ts';
import { societesCivilesOperations } from './entreprises/societes-civiles.ts';
import { permisOperations } from './urbanisme/permis.ts';
import { pluOperations } from './plu/operations.ts';
import { taxeAmenagement } from './urbanisme/taxe-amenagement.ts';
import { webhookOperations } from './webhooks/operations.ts';

/** The catalogue: every operation the API serves, declared once in its domain. */
export const OPERATIONS = [
  ...adresseOperations,
  ...compteOperations,
  ...documentOperations,
  lireDocument,
  faitsAdresse,
  ...dvfOperations,
  ...estimationOperations,
  ...HUB_OPERATIONS,
  ...marcheOperations,
  ...permisOperations,
  ...societesCivilesOperations,
  ...pluOperations,
  taxeAmenagement,
  ...webhookOperations,
] as Operation[];

import type { Operation } from './catalogue.ts';
import { compteOperations } from './compte/operations.ts';
import { taxeAmenagement } from './urbanisme/taxe-amenagement.ts';
import { webhookOperations } from './webhooks/operations.ts';

/** The catalogue: every operation the API serves, declared once in its domain. */
export const OPERATIONS = [...compteOperations, taxeAmenagement, ...webhookOperations] as Operation[];

import type { Operation } from './catalogue.ts';
import { taxeAmenagement } from './urbanisme/taxe-amenagement.ts';
import { webhookOperations } from './webhooks/operations.ts';

/** The catalogue: every operation the API serves, declared once in its domain. */
export const OPERATIONS = [taxeAmenagement, ...webhookOperations] as Operation[];

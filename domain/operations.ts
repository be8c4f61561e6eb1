import type { Operation } from './catalogue.ts';

/** The catalogue: every operation the API serves, declared once in its domain. */
export const OPERATIONS: Operation[] = [];

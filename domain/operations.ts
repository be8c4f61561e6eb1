import { adresseOperations } from './adresses/resoudre.ts';
import { agencesOperations } from './agences/operations.ts';
import { annoncesOperations } from './annonces/operations.ts';
import type { Operation } from './catalogue.ts';
import { compteOperations } from './compte/operations.ts';
import { lireDocument } from './documents/lire-operation.ts';
import { documentOperations } from './documents/operations.ts';
import { dossiersOperations } from './dossiers/operations.ts';
import { faitsAdresse } from './dpe/faits.ts';
import { fluxAdressesOperations } from './flux/adresses.ts';
import { estimationOperations } from './estimation/operations.ts';
import { exportsOperations } from './exports/operations.ts';
import { hubOperations } from './hub/operations.ts';
import { jeuxOperations } from './jeux/operations.ts';
import { marcheOperations } from './marche/operations.ts';
import { dvfOperations } from './dvf/operations.ts';
import { societesCivilesOperations } from './entreprises/societes-civiles.ts';
import { permisOperations } from './urbanisme/permis.ts';
import { pluOperations } from './plu/operations.ts';
import { preMarcheOperations } from './pre-marche/operations.ts';
import { taxeAmenagement } from './urbanisme/taxe-amenagement.ts';
import { urbanismeOperations } from './urbanisme/operations.ts';
import { veillesOperations } from './veilles/operations.ts';
import { webhookOperations } from './webhooks/operations.ts';
import { estOutil } from './outils.ts';

/** Every operation but the Hub's, which a Hub question may call as tools. */
const OUTILS_POSSIBLES = [
  ...adresseOperations,
  ...agencesOperations,
  ...annoncesOperations,
  ...compteOperations,
  ...documentOperations,
  lireDocument,
  faitsAdresse,
  ...dvfOperations,
  ...estimationOperations,
  // REST only (restOnly): never offered as a tool, whatever list they are in.
  ...exportsOperations,
  ...fluxAdressesOperations,
  ...jeuxOperations,
  ...marcheOperations,
  ...permisOperations,
  ...urbanismeOperations,
  ...dossiersOperations,
  ...societesCivilesOperations,
  ...pluOperations,
  ...preMarcheOperations,
  taxeAmenagement,
  ...veillesOperations,
  ...webhookOperations,
] as Operation[];

/** The catalogue: every operation the API serves, declared once in its domain. */
export const OPERATIONS: Operation[] = [
  ...OUTILS_POSSIBLES,
  ...(hubOperations([...new Set(OUTILS_POSSIBLES.filter(estOutil).map((o) => o.tool))]) as Operation[]),
];

/**
 * The specification's operations not served yet: its catalogue names them, their domains have not landed. The
 * description lists them, so that every gap is visible and deliberate; a test fails on an operation of the
 * specification that is neither served nor here, and on one here that is served. Each landing domain empties it.
 */
export const OPERATIONS_A_VENIR: ReadonlyArray<{ outil: string; methode: 'GET' | 'POST'; chemin: string }> = [];

import type { Db } from '../db/client.ts';
import type { Config } from '../lib/config.ts';
import { createCursors } from '../lib/cursor.ts';
import { createOutboundHttp } from '../lib/outbound-http.ts';
import type { Services } from './catalogue.ts';
import { fileDeliveryFromConfig } from './documents/telechargement.ts';
import { creneauDe } from './jeux/requete.ts';

/**
 * What handlers use, built from the configuration and the database: by the api for its routes, by the worker for
 * the Hub's tool calls (the same operations, run in-process). The caller adds what only it has (the task engine,
 * the task ends it listens to).
 */
export async function createServices(config: Config, db: Db, overrides: Partial<Services> = {}): Promise<Services> {
  const secret = await db.query<{ valeur: string }>(`SELECT valeur FROM parametres WHERE nom = 'secret_curseurs'`);
  const valeur = secret.rows[0]!.valeur;
  return {
    db,
    outbound: createOutboundHttp({ allowLoopback: config.OUTBOUND_ALLOW_LOOPBACK }),
    cursors: createCursors(valeur),
    now: () => new Date(),
    creneauLourd: creneauDe(config.CRENEAU_LOURD),
    files: fileDeliveryFromConfig(config, valeur),
    ...overrides,
  };
}

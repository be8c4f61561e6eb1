import type { FastifyInstance } from 'fastify';
import { createDb, type Db } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import type { Config } from '../lib/config.ts';
import { buildApp } from './app.ts';
import { createReadiness, type Readiness } from './readiness.ts';
import { connectTemporal, createTemporalEngine, createTemporalHub, retryDelaysS } from '../lib/temporal.ts';
import { startTaskResumer } from '../domain/taches/reprise.ts';

export interface RunningServer {
  app: FastifyInstance;
  db: Db;
  url: string;
  /** What `/health` waits for before it answers 200 (the data `npm start` loads). */
  readiness: Readiness;
  close(): Promise<void>;
}

/** Connects, migrates, builds and listens. Used by api/main.ts and by the embedded default (scripts/start.ts). */
export async function startServer(
  config: Config,
  databaseUrl: string,
  options: { chargement?: string } = {},
): Promise<RunningServer> {
  const readiness = createReadiness(options.chargement ?? null);
  const db = createDb(databaseUrl);
  await migrate(db);
  // Without Temporal the quick reads are served and the long operations answer 503 service_indisponible.
  const temporal = config.TEMPORAL_ADDRESS ? await connectTemporal(config.TEMPORAL_ADDRESS) : null;
  const tasks = temporal
    ? createTemporalEngine(temporal.client, {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        delaisLivraisonS: retryDelaysS(config.WEBHOOKS_RETRY_DELAYS),
      })
    : undefined;
  const hub = temporal ? createTemporalHub(temporal.client, { taskQueue: config.TEMPORAL_TASK_QUEUE }) : undefined;
  const app = await buildApp({ config, db, services: { tasks, hub }, readiness });
  // Tasks left unstarted by an api that stopped between writing them and starting them (this one or another).
  const resumer = tasks
    ? startTaskResumer({ db, engine: tasks }, (error) => app.log.warn({ err: error }, 'reprise des tâches en échec'))
    : null;
  const address = await app.listen({ port: config.PORT, host: config.HOST });
  return {
    app,
    db,
    url: address.replace('://[::1]', '://localhost'),
    readiness,
    async close() {
      await resumer?.stop();
      await app.close();
      await tasks?.drain();
      await temporal?.close();
      await db.end();
    },
  };
}

/** Stops `close` once on SIGINT/SIGTERM; a second signal forces the exit. */
export function onShutdown(close: () => Promise<void>) {
  let closing = false;
  const stop = (signal: string) => {
    if (closing) process.exit(1);
    closing = true;
    console.log(`\n${signal} reçu : arrêt propre…`);
    close().then(
      () => process.exit(0),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

import { createActivities } from '../activities/index.ts';
import { onShutdown } from '../api/server.ts';
import { createDb } from '../db/client.ts';
import { connectDataDir } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { outilsDuHub } from '../domain/hub/outils-hub.ts';
import { createPipeline } from '../domain/invoke.ts';
import { OPERATIONS } from '../domain/operations.ts';
import { createOutils } from '../domain/outils.ts';
import { createAccounts } from '../domain/platform/accounts.ts';
import { dossierDuLac } from '../domain/jeux/lac.ts';
import { createServices } from '../domain/services.ts';
import { loadConfigOrExit } from '../lib/config.ts';
import { modelFromConfig } from '../lib/model.ts';
import { connectTemporal, planifierEditions, retryDelaysS } from '../lib/temporal.ts';
import { startDiffuseur } from './diffuseur.ts';
import { startWorker } from './worker.ts';

// The worker process alone (the multi-machine path): it needs TEMPORAL_ADDRESS; `npm start` runs everything.
const config = loadConfigOrExit();
if (!config.TEMPORAL_ADDRESS) {
  console.error('TEMPORAL_ADDRESS est requis pour lancer le worker seul ; `npm start` lance aussi Temporal.');
  process.exit(2);
}
const database = await connectDataDir(config);
const db = createDb(database.url);
await migrate(db);
// The Hub's tool calls run the operations here, through the same pipeline as the api: same checks, same ledger.
const services = await createServices(config, db);
const pipeline = createPipeline({
  operations: OPERATIONS,
  services,
  accounts: createAccounts(db, { quotaMinute: config.DEFAULT_QUOTA_MINUTE }),
});
const worker = await startWorker({
  address: config.TEMPORAL_ADDRESS,
  taskQueue: config.TEMPORAL_TASK_QUEUE,
  activities: createActivities({
    db,
    model: modelFromConfig(config),
    outbound: services.outbound,
    modelConcurrency: config.MODEL_CONCURRENCY,
    files: services.files,
    lac: { dossier: dossierDuLac(config.DATA_DIR) },
    hub: outilsDuHub(pipeline, createOutils(OPERATIONS), { taches: services.tasks !== undefined }),
  }),
});
// Listing events and address novelties to the subscriptions, watches and alerts; one instance at a time fans out.
const temporal = await connectTemporal(config.TEMPORAL_ADDRESS);
const diffuseur = startDiffuseur({
  db,
  client: temporal.client,
  taskQueue: config.TEMPORAL_TASK_QUEUE,
  delaisS: retryDelaysS(config.WEBHOOKS_RETRY_DELAYS),
});
// The daily export editions: a Temporal Schedule, created or brought up to date at each start. A failure here is said
// and leaves the worker running: the editions can still be built by `npm run export`.
await planifierEditions(temporal.client, { taskQueue: config.TEMPORAL_TASK_QUEUE }).then(
  (r) => console.log(`Éditions d’export : planification quotidienne ${r === 'cree' ? 'créée' : 'à jour'}.`),
  (error: Error) => console.error(`Éditions d’export : planification impossible (${error.message}).`),
);
console.log(`Worker à l’écoute de ${config.TEMPORAL_ADDRESS}`);
onShutdown(async () => {
  await diffuseur.stop();
  await temporal.close();
  await worker.stop();
  await pipeline.close();
  await db.end();
  await database.stop();
});

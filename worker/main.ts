import { createActivities } from '../activities/index.ts';
import { onShutdown } from '../api/server.ts';
import { createDb } from '../db/client.ts';
import { connectDataDir } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { loadConfig } from '../lib/config.ts';
import { modelFromConfig } from '../lib/model.ts';
import { createOutboundHttp } from '../lib/outbound-http.ts';
import { startWorker } from './worker.ts';

// The worker process alone (the multi-machine path): it needs TEMPORAL_ADDRESS; `npm start` runs everything.
const config = loadConfig();
if (!config.TEMPORAL_ADDRESS) {
  console.error('TEMPORAL_ADDRESS est requis pour lancer le worker seul ; `npm start` lance aussi Temporal.');
  process.exit(2);
}
const database = await connectDataDir(config);
const db = createDb(database.url);
await migrate(db);
const worker = await startWorker({
  address: config.TEMPORAL_ADDRESS,
  taskQueue: config.TEMPORAL_TASK_QUEUE,
  activities: createActivities({
    db,
    model: modelFromConfig(config),
    outbound: createOutboundHttp({ allowLoopback: config.OUTBOUND_ALLOW_LOOPBACK }),
    modelConcurrency: config.MODEL_CONCURRENCY,
  }),
});
console.log(`Worker à l’écoute de ${config.TEMPORAL_ADDRESS}`);
onShutdown(async () => {
  await worker.stop();
  await db.end();
  await database.stop();
});

import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import type { Db } from '../../db/client.ts';
import { outilsDuHub } from '../../domain/hub/outils-hub.ts';
import type { FileDelivery } from '../../domain/documents/telechargement.ts';
import type { Pipeline } from '../../domain/invoke.ts';
import { OPERATIONS } from '../../domain/operations.ts';
import { createOutils } from '../../domain/outils.ts';
import { createOpenAiModel } from '../../lib/model.ts';
import { createOutboundHttp } from '../../lib/outbound-http.ts';
import { connectTemporal, createTemporalEngine, createTemporalHub } from '../../lib/temporal.ts';
import { startWorker, type RunningWorker } from '../../worker/worker.ts';
import { MODEL_SERVER_MODEL } from './model-server.ts';

/**
 * The task runtime of one test file on the run's Temporal dev server: its own task queue, a Temporal client engine
 * for the api, and workers started on demand (in this process, or as separate processes by the caller).
 */
export async function createRuntime(options: { delaisLivraisonS?: number[] } = {}) {
  const address = inject('temporalAddress');
  const taskQueue = `test-${randomBytes(6).toString('hex')}`;
  const temporal = await connectTemporal(address);
  const engine = createTemporalEngine(temporal.client, {
    taskQueue,
    delaisLivraisonS: options.delaisLivraisonS ?? [0.2, 0.2, 0.2, 0.2, 0.2],
  });
  const workers: RunningWorker[] = [];
  return {
    address,
    taskQueue,
    client: temporal.client,
    engine,
    /** The Hub's conversations on the same queue: a worker started with the app's pipeline answers them. */
    hub: createTemporalHub(temporal.client, { taskQueue }),
    /** A worker on this queue; with `pipeline`, the Hub's questions call the operations through it. */
    async startWorker(
      db: Db,
      modelUrl: string | null,
      pipeline?: Pipeline,
      files?: FileDelivery,
      lac?: { dossier: string },
    ) {
      const worker = await startWorker({
        address,
        taskQueue,
        activities: createActivities({
          db,
          model: modelUrl
            ? createOpenAiModel({ baseURL: modelUrl, model: MODEL_SERVER_MODEL, timeoutMs: 20_000 })
            : null,
          outbound: createOutboundHttp({ allowLoopback: true }),
          modelConcurrency: 2,
          // The generated files the worker stores (the dossiers' drawings), as the app that serves their links sees them.
          files,
          lac,
          // As the worker runs them: its pipeline has no task engine.
          hub: pipeline ? outilsDuHub(pipeline, createOutils(OPERATIONS), { taches: false }) : undefined,
        }),
      });
      workers.push(worker);
      return worker;
    },
    async close() {
      for (const worker of workers) await worker.stop();
      await temporal.close();
    },
  };
}

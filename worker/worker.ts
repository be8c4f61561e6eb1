import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Activities } from '../activities/index.ts';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * A file of the workflows already bundled, that every worker of this process tree reuses instead of bundling them
 * again (2 to 3 s each here). The test suite sets it once per run (test/support/global-setup.ts), for the dozens of
 * workers its files start and kill; unset, each worker bundles the workflows of this checkout.
 */
export const WORKFLOW_BUNDLE_ENV = 'SVC_WORKFLOW_BUNDLE';

export interface RunningWorker {
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
  stop(): Promise<void>;
}

let runtimeReady = false;
/** The SDK's runtime is per process and installed once: warnings and errors only (no bundler statistics). */
function installRuntime() {
  if (runtimeReady) return;
  runtimeReady = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Already installed by the host process (a test harness, another worker): keep its settings.
  }
}

/** A Temporal worker running the service's workflows and activities until `stop()`. */
export async function startWorker(options: {
  address: string;
  activities: Activities;
  taskQueue: string;
  maxConcurrentActivities?: number;
}): Promise<RunningWorker> {
  installRuntime();
  const connection = await NativeConnection.connect({ address: options.address });
  const worker = await Worker.create({
    connection,
    taskQueue: options.taskQueue,
    ...(process.env[WORKFLOW_BUNDLE_ENV]
      ? { workflowBundle: { codePath: process.env[WORKFLOW_BUNDLE_ENV] } }
      : { workflowsPath: WORKFLOWS_PATH }),
    activities: options.activities,
    maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities ?? 20,
    // Activities get this long to finish once a shutdown starts before they are cancelled.
    shutdownGraceTime: '10 seconds',
  });
  const done = worker.run().finally(() => connection.close());
  return {
    done,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}

import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Activities } from '../activities/index.ts';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

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
    workflowsPath: WORKFLOWS_PATH,
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

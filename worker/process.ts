import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const READY = 'Worker à l’écoute';

export interface WorkerProcess {
  /** Resolves when the worker ended by itself, not by `stop`: the service then has no worker. */
  died: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * The worker of `npm start` in a process of its own (`worker/main.ts`, as in a multi-machine deployment): the api's
 * event loop never waits behind an activity or the workflow sandbox, and the two use both cores. Resolves once the
 * worker polls its task queue; its lines go to this process's output.
 */
export async function startWorkerProcess(env: {
  DATABASE_URL: string;
  TEMPORAL_ADDRESS: string;
}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Should this process end without calling stop, the worker ends with it.
  const orphanGuard = () => child.kill('SIGTERM');
  process.on('exit', orphanGuard);
  let stopping = false;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      console.log(line);
      if (line.startsWith(READY)) resolve();
    });
    void exited.then((code) => reject(new Error(`le worker s’est arrêté au démarrage (code ${code})`)));
  });
  try {
    await ready;
  } catch (error) {
    process.off('exit', orphanGuard);
    throw error;
  }
  return {
    died: exited.then((code) => (stopping ? new Promise<never>(() => {}) : code)),
    async stop() {
      stopping = true;
      process.off('exit', orphanGuard);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

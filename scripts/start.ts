import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { onShutdown, startServer } from '../api/server.ts';
import { startEmbeddedPostgres } from '../db/embedded.ts';
import { randomToken } from '../lib/crypto.ts';
import { loadConfigOrExit } from '../lib/config.ts';
import { startWorkerProcess } from '../worker/process.ts';
import { liveData, loadSandbox } from '../domain/sandbox/load.ts';
import { SOURCE_DEMONSTRATION } from '../domain/qualite.ts';
import { startTemporalDevServer } from './temporal-server.ts';
import { sousVerrouDeChargement } from '../domain/import/verrou.ts';

/**
 * The embedded default: everything on one machine with no other step. A real PostgreSQL under DATA_DIR unless
 * DATABASE_URL is set, a Temporal dev server unless TEMPORAL_ADDRESS is set, migrations, the api and a worker; an
 * admin token kept under DATA_DIR when ADMIN_TOKEN is unset, the frozen sandbox, and, on the first start, a
 * demonstration organisation whose keys are printed once. With the embedded PostgreSQL, live data that is empty gets
 * the sandbox's territory as labelled demonstration data, until the first real import removes it.
 */
const config = loadConfigOrExit();
const dataDir = path.resolve(config.DATA_DIR);

// Registered first, so that a stop asked for while starting stops what has started; whatever is still starting has
// its own guard that ends it with this process.
const stops: Array<() => Promise<void>> = [];
let stopping = false;
onShutdown(async () => {
  stopping = true;
  for (const stop of stops) await stop();
});
let databaseUrl = config.DATABASE_URL;
let temporalUi: string | null = null;
let server;
let demonstration = false;
try {
  await mkdir(dataDir, { recursive: true });
  if (!databaseUrl) {
    const embedded = await startEmbeddedPostgres(dataDir, { rootDir: config.EMBEDDED_PG_ROOT_DIR });
    databaseUrl = embedded.url;
    stops.push(embedded.stop);
    console.log(
      embedded.databaseDir === path.join(dataDir, 'postgres')
        ? `PostgreSQL embarqué : données sous ${embedded.databaseDir}`
        : `PostgreSQL embarqué : données sous ${embedded.databaseDir} (son utilisateur système n’atteint pas ${dataDir})`,
    );
  }

  if (!config.ADMIN_TOKEN) {
    const file = path.join(dataDir, 'admin-token');
    config.ADMIN_TOKEN = await readFile(file, 'utf8')
      .then((t) => t.trim())
      .catch(async () => {
        const token = `adm_${randomToken(40)}`;
        await writeFile(file, `${token}\n`, { mode: 0o600 });
        return token;
      });
    await chmod(file, 0o600);
  }

  if (!config.TEMPORAL_ADDRESS) {
    const temporal = await startTemporalDevServer({
      dbFile: path.join(dataDir, 'temporal.db'),
      log: (line) => console.log(line),
    });
    config.TEMPORAL_ADDRESS = temporal.address;
    temporalUi = temporal.uiUrl;
    stops.unshift(temporal.stop);
    console.log(
      `Temporal (serveur de développement) : ${temporal.address}, historique dans ${path.join(dataDir, 'temporal.db')}`,
    );
  }
  // /health answers 503 until the data below serves, and the worker runs.
  server = await startServer(config, databaseUrl, { chargement: 'bac à sable et territoire de démonstration' });
  stops.unshift(server.close);
  const db = server.db;
  // Under the load lock: an import started meanwhile waits for this load instead of interleaving with it.
  await sousVerrouDeChargement(
    db,
    () => console.log('Un import est en cours : le chargement du bac à sable attend qu’il finisse…'),
    async () => {
      // The frozen sandbox read by pk_test_ keys. Idempotent: a second start changes nothing.
      await loadSandbox(db, { dataset: 'sandbox', log: (line) => console.log(`  ${line}`) });
      // Never over real data, nor into a database of DATABASE_URL; loaded again at each start while it is there
      // (idempotent), so that it follows the generator.
      if (!config.DATABASE_URL && (await liveData(db)) !== 'reelles') {
        await loadSandbox(db, { dataset: 'live', log: (line) => console.log(`  live ${line}`) });
        demonstration = true;
      }
    },
  );
  const worker = await startWorkerProcess({ DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS });
  // The worker stops first (its activities finish), then the api, Temporal and PostgreSQL.
  stops.unshift(worker.stop);
  void worker.died.then(async (code) => {
    // Without its worker no task would ever end: stop everything, loudly, for a supervisor to start again.
    console.error(`Le worker s’est arrêté (code ${code}) : arrêt du service.`);
    for (const stop of stops) await stop().catch(() => {});
    process.exit(1);
  });
} catch (error) {
  // A stop asked for while starting: what failed is what the stop closed; its handler ends the process.
  if (stopping) await new Promise(() => {});
  for (const stop of stops) await stop().catch(() => {});
  // One sentence that says what happened and what to do, never a stack trace.
  console.error(`Le service n’a pas démarré : ${explain(error)}`);
  process.exit(1);
}

/** The failures a user can fix, said with what to do; the others with their own message. */
function explain(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  if (code === 'EADDRINUSE') return `le port ${config.PORT} est déjà pris : choisissez-en un autre avec PORT=….`;
  if (code === 'EACCES' && /listen/.test(message ?? ''))
    return `le port ${config.PORT} est réservé : PORT=3000 ou plus.`;
  const database = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', '28P01', '28000', '3D000'];
  if (config.DATABASE_URL && code && database.includes(code)) {
    return `PostgreSQL de DATABASE_URL injoignable ou refusé (${message}) : vérifiez l’adresse, ou retirez DATABASE_URL pour le serveur embarqué.`;
  }
  return message ?? String(error);
}

const base = server.url;
const demo = await server.db.query(`SELECT count(*)::int AS n FROM organisations`);
console.log(`
API          ${base}/api/v1
Santé        ${base}/health
Description  ${base}/api/v1/openapi.json
Docs         ${base}/docs
Temporal UI  ${temporalUi ?? (config.TEMPORAL_ADDRESS ? `(serveur externe ${config.TEMPORAL_ADDRESS})` : '—')}
Admin        ${base}/admin/v1   (Authorization: Bearer <ADMIN_TOKEN>${!process.env.ADMIN_TOKEN ? `, jeton dans ${path.join(dataDir, 'admin-token')}` : ''})`);
if (demonstration) {
  console.log(
    `Données live : le territoire de démonstration, fictif (source « ${SOURCE_DEMONSTRATION} ») ; le premier import de données réelles (npm run import -- <source> <fichier>) le retire, et le service le voit en quelques secondes.`,
  );
}

if (demo.rows[0].n === 0) {
  // First start: a demonstration organisation, its keys shown once (only their hashes are stored).
  const headers = { authorization: `Bearer ${config.ADMIN_TOKEN}`, 'content-type': 'application/json' };
  const org = await server.app.inject({
    method: 'POST',
    url: '/admin/v1/organisations',
    headers,
    payload: { nom: 'Organisation de démonstration', acces: 'data', plafond_depense_eur: 0 },
  });
  const orgId = org.json().id;
  const live = await server.app.inject({
    method: 'POST',
    url: `/admin/v1/organisations/${orgId}/cles`,
    headers,
    payload: { mode: 'live', personnelle: true },
  });
  const test = await server.app.inject({
    method: 'POST',
    url: `/admin/v1/organisations/${orgId}/cles`,
    headers,
    payload: { mode: 'test' },
  });
  console.log(`
Organisation de démonstration créée (accès data, 500 crédits gratuits + 100 000 inclus ce mois).
Clés montrées une seule fois — notez-les :
  live (personnelle)  ${live.json().cle}
  test (bac à sable)  ${test.json().cle}
Essai :
  curl -H "Authorization: Bearer ${live.json().cle}" ${base}/api/v1/compte/profil`);
} else {
  console.log(`
Obtenir une clé :
  curl -X POST -H "Authorization: Bearer $(cat ${path.join(dataDir, 'admin-token')})" -H 'content-type: application/json' \\
    -d '{"nom":"Mon organisation","acces":"usage"}' ${base}/admin/v1/organisations
  curl -X POST -H "Authorization: Bearer …" -H 'content-type: application/json' \\
    -d '{"mode":"live","personnelle":true}' ${base}/admin/v1/organisations/<id>/cles`);
}
// Everything serves: the URLs and keys are printed, /health answers 200.
server.readiness.pret();

import { loadConfigOrExit } from '../lib/config.ts';
import { onShutdown, startServer } from './server.ts';

// The api process alone (the multi-machine path): it needs an external PostgreSQL. `npm start` runs everything.
const config = loadConfigOrExit();
if (!config.DATABASE_URL) {
  console.error('DATABASE_URL est requis pour lancer l’api seule ; `npm start` lance aussi une base embarquée.');
  process.exit(2);
}
const server = await startServer(config, config.DATABASE_URL);
console.log(`API à l’écoute sur ${server.url}`);
onShutdown(server.close);

/**
 * `npm run bench`: every benchmark of bench/, one after the other, each in its own process; each writes its own
 * section of bench/RESULTS.md with the machine and the date. `npm run bench -- pipeline tasks` runs some of them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

const ALL = [
  'pipeline',
  'tasks',
  'hub',
  'stalled',
  'pdf',
  'documents',
  'adresses',
  'dvf',
  'marche',
  'estimation',
  'annonces',
  'diffusion',
  'urbanisme',
  'dossier',
  'pre-marche',
  'exports',
  'jeux',
];
const chosen = process.argv.slice(2).length ? process.argv.slice(2) : ALL;
let failed = 0;
for (const name of chosen) {
  const file = path.join(import.meta.dirname, `${name}.ts`);
  if (!existsSync(file)) {
    console.error(`bench ${name} : fichier absent (${file})`);
    failed += 1;
    continue;
  }
  console.log(`\n=== bench ${name}`);
  const run = spawnSync(process.execPath, [file], { stdio: 'inherit' });
  if (run.status !== 0) failed += 1;
}
process.exit(failed ? 1 : 0);

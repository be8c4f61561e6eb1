/**
 * Exports benchmark (`node bench/exports.ts`): the `dvf_adresse` edition of BENCH_EXPORTS mutations (1 000 000 by
 * default) built as the daily workflow builds it (domain/exports/construire.ts): PostgreSQL's COPY to a temporary CSV,
 * DuckDB writing Parquet (zstd) then csv.gz with explicit types, the file read back for the quality sheet, the files
 * stored in a folder, the edition recorded. The mutations are generated in SQL, deterministically (a hash of the row
 * number), over five vintages, with the columns the edition reads filled as an import fills them.
 * Figures go to bench/RESULTS.md, section "Exports".
 */
import os from 'node:os';
import path from 'node:path';
import { createDb } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { construireEdition } from '../domain/exports/construire.ts';
import { createFolderStorage } from '../lib/storage.ts';
import { benchDatabase } from './database.ts';
import { machine, writeSection } from './results.ts';

const ROWS = Number(process.env.BENCH_EXPORTS ?? 1_000_000);
const VINTAGES = [2020, 2021, 2022, 2023, 2024];

const database = await benchDatabase('exports');
const db = createDb(database.url, 4);
try {
  await migrate(db);
  const chargeAvant = os.loadavg().map((l) => l.toFixed(2));
  let started = performance.now();
  for (const millesime of VINTAGES) {
    await db.query(
      `CREATE TABLE IF NOT EXISTS dvf_mutations_live_${millesime} PARTITION OF dvf_mutations
         FOR VALUES FROM ('live', ${millesime}) TO ('live', ${millesime + 1})`,
    );
  }
  // hashint: a deterministic pseudo-random integer of the row number and a salt, for values that look like sales.
  await db.query(
    `INSERT INTO dvf_mutations (dataset, id_mutation, format, date_mutation, millesime, nature,
      nature_libelle, valeur_fonciere, adresse_numero, adresse_voie, code_voie, code_postal, insee, commune,
      departement, cle_ban, lat, lon, parcelle_principale, parcelles, nb_dispositions, nb_lignes, locaux, terrains,
      nombre_lots, types_locaux, logements, surface_logements, prix_m2, vente_en_bloc, avec_dependance, avec_local_pro,
      prix_atypique, surface_atypique, doublon_probable)
    SELECT 'live', m || '-' || i, 'etalab', make_date(m, 1 + h % 12, 1 + h % 28), m, 'vente', 'Vente',
      (50000 + h % 900000)::numeric(15, 2), 1 + h % 120, 'RUE DE LA BENCH ' || (h % 500), lpad((h % 9000)::text, 4, '0'),
      lpad((1000 + h % 94000)::text, 5, '0'), c, 'Commune ' || c, left(c, 2), c || '_b' || (h % 999) || '_00001',
      43 + (h % 600000) / 100000.0, -1 + (h % 700000) / 100000.0, c || '000AB' || lpad((h % 9999)::text, 4, '0'),
      ARRAY[c || '000AB' || lpad((h % 9999)::text, 4, '0')], 1, 1 + h % 3, '[]', '[]', h % 3,
      ARRAY[(ARRAY['Appartement', 'Maison'])[1 + h % 2]], 1, 20 + h % 180, (50000 + h % 900000) / (20 + h % 180),
      false, h % 5 = 0, false, false, false, false
    FROM (SELECT i, ${VINTAGES[0]} + i % ${VINTAGES.length} AS m, abs(hashint4(i)) AS h,
                 lpad((1001 + abs(hashint4(i + 7)) % 95000)::text, 5, '0') AS c
            FROM generate_series(1, $1) i) s`,
    [ROWS],
  );
  await db.query('ANALYZE dvf_mutations');
  const chargement = (performance.now() - started) / 1000;
  console.log(`${ROWS} mutations générées en ${chargement.toFixed(1)} s`);

  const lignes: string[] = [];
  started = performance.now();
  const r = await construireEdition({
    db,
    storage: createFolderStorage(path.join(database.dir, 'fichiers')),
    jeu: 'dvf_adresse',
    perimetre: 'contrat',
    log: (l) => {
      lignes.push(l);
      console.log(l);
    },
  });
  const total = (performance.now() - started) / 1000;
  const chargeApres = os.loadavg().map((l) => l.toFixed(2));
  // The log line of the files: PostgreSQL's COPY once, DuckDB writing each format from it.
  const fichiersMs = Number(/en (\d+) ms/.exec(lignes.find((l) => l.includes(' lignes en ')) ?? '')?.[1] ?? NaN);
  const tailles = r.formats.map((f) => `${f.format} ${(f.taille_octets / 2 ** 20).toFixed(1)} MiB`).join(', ');
  await writeSection(
    'Exports',
    `Machine: ${machine()}. ${database.label}. Load average (1 / 5 / 15 min) before: ${chargeAvant.join(' / ')}, after: ${chargeApres.join(' / ')}.

The \`dvf_adresse\` edition (23 columns) of ${ROWS} generated mutations, built as the daily workflow builds it
(\`domain/exports/construire.ts\`): PostgreSQL's \`COPY … TO STDOUT\` once into a temporary CSV, then
DuckDB casting it to the declared types and writing each file from it (\`lib/parquet.ts\`); then the Parquet file read back by
DuckDB for the quality sheet (nulls per column, date range), the files stored, the edition recorded. Status:
**${r.statut}**${r.raison ? ` (${r.raison})` : ''}.

| measure | value |
| ------- | ----- |
| rows | ${r.lignes} |
| files | ${tailles} |
| COPY + DuckDB writing both files | ${(fichiersMs / 1000).toFixed(1)} s, ${Math.round(ROWS / (fichiersMs / 1000))} rows/s |
| whole edition | ${total.toFixed(1)} s, **${Math.round(ROWS / total)} rows/s** |

Whole edition: both formats, the quality sheet read back from the Parquet file, storage and records.`,
  );
} finally {
  await db.end();
  await database.close();
}

import { z } from 'zod';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .default('false')
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Every setting the service reads, validated once at boot. Documented in README.md and .env.example. */
export const ConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('.data'),
  DATABASE_URL: z.string().url().optional(),
  /**
   * As root, the embedded PostgreSQL runs as the unprivileged `postgres` user: what that user cannot reach (a checkout
   * under /root) is placed here instead, binaries and data (the start line says where).
   */
  EMBEDDED_PG_ROOT_DIR: z.string().min(1).default('/var/lib/svc'),
  ADMIN_TOKEN: z.string().min(16, 'au moins 16 caractères').optional(),
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  /** Task queue shared by the api (which starts workflows) and the workers (which run them). */
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('svc'),
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_MODEL: z.string().min(1).optional(),
  /** Development and tests only: lets outbound HTTP reach loopback addresses (http or https). Nothing else private, ever. */
  OUTBOUND_ALLOW_LOOPBACK: booleanFlag,
  /** Largest accepted request body, in bytes (413 corps_trop_lourd beyond it). */
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1_048_576),
  /** Seconds a client has to send a whole request, headers and body (408 requete_trop_lente beyond them). */
  REQUEST_TIMEOUT_S: z.coerce.number().int().min(1).max(3600).default(30),
  /** Default per-minute rate of a new organisation (429 quota_minute beyond it). */
  DEFAULT_QUOTA_MINUTE: z.coerce.number().int().min(1).default(600),
  /** Retry delays of webhook deliveries (tests, development): comma-separated durations, e.g. `1s,2s,5s`. */
  WEBHOOKS_RETRY_DELAYS: z
    .string()
    .regex(
      /^\s*\d+(\.\d+)?\s*(ms|s|m|h)?\s*(,\s*\d+(\.\d+)?\s*(ms|s|m|h)?\s*)*$/,
      'durées séparées par des virgules (ex. 1s,5s)',
    )
    .optional(),
  /** Model readings run at once per worker (PLU, documents): beyond it they wait their turn. */
  MODEL_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Absolute base of the links the API hands out (e.g. https://api.example.fr); unset: paths from /api/v1. */
  PUBLIC_BASE_URL: z.string().url().optional(),
  /** Generated files go to this S3-compatible endpoint when set (bucket and keys then required), else DATA_DIR/fichiers. */
  STORAGE_S3_ENDPOINT: z.string().url().optional(),
  STORAGE_S3_BUCKET: z.string().min(3).max(63).optional(),
  STORAGE_S3_REGION: z.string().min(1).default('us-east-1'),
  STORAGE_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  STORAGE_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Virtual-hosted addresses (bucket.endpoint) instead of path-style (endpoint/bucket), which every server accepts. */
  STORAGE_S3_VIRTUAL_HOSTED: booleanFlag,
  /**
   * The evening window (Paris time, `HH:MM-HH:MM`) in which datasets flagged creneau_lourd are not read and aggregates
   * are served from memory only (503 creneau_reserve): the specification's 20:30-midnight. `aucun` opens it: the
   * fuzzing run sets it, as it looks for crashes at whatever hour CI runs (the window itself is tested with a clock).
   */
  CRENEAU_LOURD: z
    .string()
    .regex(/^(aucun|([01]\d|2[0-3]):[0-5]\d-(([01]\d|2[0-3]):[0-5]\d|24:00))$/, 'HH:MM-HH:MM (heure de Paris) ou aucun')
    .default('20:30-24:00'),
  /** Validity of a generated document's download link, in seconds (the file is purged after it). */
  DOCUMENTS_LINK_TTL_S: z.coerce.number().int().min(60).max(604_800).default(3600),
});

export type Config = z.infer<typeof ConfigSchema>;

/** A setting that cannot work, said as one sentence per wrong variable (never a stack trace). */
export class ConfigError extends Error {}

/** The S3 settings a bucket needs once STORAGE_S3_ENDPOINT is set. */
const S3_REQUIRED = ['STORAGE_S3_BUCKET', 'STORAGE_S3_ACCESS_KEY_ID', 'STORAGE_S3_SECRET_ACCESS_KEY'] as const;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = ConfigSchema.safeParse(present);
  const wrong = parsed.success
    ? []
    : parsed.error.issues.map(
        (i) => `${i.path.join('.')} : ${i.message.replace(/\.$/, '')} ; corrigez-la ou retirez-la.`,
      );
  if (parsed.success && parsed.data.STORAGE_S3_ENDPOINT) {
    for (const name of S3_REQUIRED.filter((n) => !parsed.data[n])) {
      wrong.push(
        `${name} : requise quand STORAGE_S3_ENDPOINT est définie ; définissez-la, ou retirez STORAGE_S3_ENDPOINT.`,
      );
    }
  }
  if (wrong.length > 0) throw new ConfigError(wrong.map((line) => `Variable ${line}`).join('\n'));
  return parsed.data!;
}

/**
 * The configuration of a process entry (npm start, the api, the worker, the importers): a wrong one ends the process
 * with code 1 and one sentence per wrong variable on stderr, no stack trace.
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration invalide, le service ne démarre pas :\n${error.message}\n`);
    process.exit(1);
  }
}

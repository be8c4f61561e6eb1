import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { format, resolveConfig } from 'prettier';

// BENCH_RESULTS: another file, for a trial run whose figures are not to be published.
const RESULTS = process.env.BENCH_RESULTS ?? path.resolve(import.meta.dirname, 'RESULTS.md');

/** The machine a figure was measured on, as every section states it. */
export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model ?? 'CPU inconnu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}, Node ${process.version}`;
}

export function today(): string {
  return new Date().toISOString().slice(0, 10);
}

/**
 * Writes one section of bench/RESULTS.md (`## <title> — <date>`), replacing that section if present and keeping
 * the others; formatted like the rest of the project so that `prettier --check` stays clean.
 */
export async function writeSection(title: string, body: string): Promise<void> {
  const section = `## ${title} — ${today()}\n\n${body.trim()}\n`;
  const previous = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '# Benchmark results\n';
  const escaped = title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const at = previous.search(new RegExp(`^## ${escaped}\\b.*$`, 'm'));
  let next: string;
  if (at >= 0) {
    const rest = previous.slice(at + 1);
    const end = rest.search(/^## /m);
    next = previous.slice(0, at) + section + (end >= 0 ? '\n' + rest.slice(end) : '');
  } else {
    next = `${previous.trimEnd()}\n\n${section}`;
  }
  writeFileSync(RESULTS, await format(next, { ...(await resolveConfig(RESULTS)), filepath: RESULTS }));
  console.log(section);
}

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { format, resolveConfig } from 'prettier';

const RESULTS = path.resolve(import.meta.dirname, 'RESULTS.md');

/** The machine a figure was measured on, as every section states it. */
export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model ?? 'CPU inconnu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}, Node ${process.version}`;
}

/**
 * CPU time a process has used so far, its threads included, in ms (Linux: /proc, 100 ticks a second). Less sensitive
 * than req/s to what else the machine runs, so that a change of the service's own cost shows on a shared machine.
 */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
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

/**
 * Stalled clients: 500 connections that send their headers and part of a body, then nothing. Measures, against the
 * service as `npm start` runs it, how long the server keeps them (the request time-out of the README cuts them) and
 * what `/health` latency other clients see meanwhile, beside the same latency with no stalled client, in one run.
 * The clients and the prober run in a process of their own (`node bench/stalled.ts --client <url> <key>`).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { machine, writeSection } from './results.ts';
import { startService } from './service.ts';

const STALLED = 500;
const PROBES = 2000;

async function probeHealth(url: string): Promise<{ p50: number; p99: number; max: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const times: number[] = [];
  for (let i = 0; i < PROBES; i++) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      http
        .get(`${url}/health`, { agent }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`/health ${res.statusCode}`))));
        })
        .on('error', reject);
    });
    times.push(performance.now() - started);
  }
  agent.destroy();
  times.sort((a, b) => a - b);
  const at = (q: number) => Number(times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(2));
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}

/** Opens the stalled connections; resolves with the time each took to be closed by the server. */
function stall(url: string, key: string): { opened: Promise<void>; closed: Promise<number[]> } {
  const { hostname, port } = new URL(url);
  const body = '{"faits":["Je cherche un appartement';
  const request =
    `POST /api/v1/compte/memoire HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n${body}`;
  const opened: Promise<void>[] = [];
  const closed: Promise<number>[] = [];
  for (let i = 0; i < STALLED; i++) {
    const socket = net.connect(Number(port), hostname);
    const started = performance.now();
    opened.push(new Promise((resolve) => socket.once('connect', () => socket.write(request, () => resolve()))));
    closed.push(
      new Promise((resolve) => {
        socket.on('data', () => {});
        socket.on('error', () => {});
        socket.once('close', () => resolve(performance.now() - started));
      }),
    );
  }
  return { opened: Promise.all(opened).then(() => {}), closed: Promise.all(closed) };
}

if (process.argv[2] === '--client') {
  const [url, key] = process.argv.slice(3) as [string, string];
  const quiet = await probeHealth(url);
  const stalled = stall(url, key);
  await stalled.opened;
  const loaded = await probeHealth(url);
  const cut = (await stalled.closed).sort((a, b) => a - b);
  console.log(JSON.stringify({ quiet, loaded, cutMin: cut[0], cutMax: cut[cut.length - 1] }));
  process.exit(0);
}

const load = os.loadavg()[0]!.toFixed(1);
const service = await startService();
try {
  const { cle } = await service.organisation();
  const client = spawn(process.execPath, [import.meta.filename, '--client', service.url, cle], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  client.stdout.on('data', (chunk) => (out += chunk));
  await new Promise((resolve) => client.once('exit', resolve));
  const r = JSON.parse(out) as {
    quiet: { p50: number; p99: number; max: number };
    loaded: { p50: number; p99: number; max: number };
    cutMin: number;
    cutMax: number;
  };
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  await writeSection(
    'Stalled clients',
    `Machine: ${machine()}, load average ${load} when the run started. The service as \`npm start\` runs it (embedded PostgreSQL, Temporal dev server, default
log level), in its own process; the clients and the prober in another. ${STALLED} connections send the headers of a
\`POST /compte/memoire\` with a valid key and \`Content-Length: 4096\`, then 36 bytes of body, then nothing.
\`/health\` is probed ${PROBES} times in a row over one keep-alive connection, before and while they stall.

| | /health p50 | p99 | max |
|---|---|---|---|
| no stalled client | ${r.quiet.p50} ms | ${r.quiet.p99} ms | ${r.quiet.max} ms |
| ${STALLED} stalled clients | ${r.loaded.p50} ms | ${r.loaded.p99} ms | ${r.loaded.max} ms |

Stalled connections closed by the server after ${s(r.cutMin)} (first) to ${s(r.cutMax)} (last).`,
  );
} finally {
  await service.stop();
}

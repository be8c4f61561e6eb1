import { once } from 'node:events';
import type { Connection, PoolClient, Submittable } from 'pg';

/** COPY FROM STDIN over node-postgres (no extra dependency): a Submittable fed from an iterable of chunks. */

interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
  stream: NodeJS.WritableStream & { writableNeedDrain?: boolean };
}

class CopyFromStdin implements Submittable {
  readonly finished: Promise<number>;
  private settle!: (error: Error | null) => void;
  private rowCount = 0;
  private failed: Error | null = null;

  private readonly text: string;
  private readonly source: Iterable<Buffer | string> | AsyncIterable<Buffer | string>;

  constructor(text: string, source: Iterable<Buffer | string> | AsyncIterable<Buffer | string>) {
    this.text = text;
    this.source = source;
    this.finished = new Promise((resolve, reject) => {
      this.settle = (error) => (error ? reject(error) : resolve(this.rowCount));
    });
  }

  submit(connection: Connection): void {
    (connection as unknown as CopyConnection).query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection): void {
    void this.pump(connection);
  }

  private async pump(connection: CopyConnection): Promise<void> {
    try {
      for await (const chunk of this.source) {
        if (this.failed) return;
        connection.sendCopyFromChunk(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
        // The socket's own buffer bounds memory: wait for it to drain before the next chunk.
        if (connection.stream.writableNeedDrain) await once(connection.stream, 'drain');
      }
      connection.endCopyFrom();
    } catch (error) {
      connection.sendCopyFail(String((error as Error).message ?? error));
    }
  }

  handleCommandComplete(message: { text?: string }): void {
    this.rowCount = Number(/(\d+)\s*$/.exec(message.text ?? '')?.[1] ?? 0);
  }

  handleReadyForQuery(): void {
    this.settle(this.failed);
  }

  handleError(error: Error): void {
    // The server answers ReadyForQuery after an error, but the client no longer routes it to this query.
    this.failed = error;
    this.settle(error);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handlePortalSuspended(): void {}
  handleEmptyQuery(): void {}
  handleCopyData(): void {}
}

/** Runs `COPY … FROM STDIN` on `client` with the given chunks; resolves with the number of rows copied. */
export function copyFrom(
  client: PoolClient,
  sql: string,
  chunks: Iterable<Buffer | string> | AsyncIterable<Buffer | string>,
): Promise<number> {
  const copy = new CopyFromStdin(sql, chunks);
  client.query(copy);
  return copy.finished;
}

/** COPY data in slices of 1 MiB (views of the same bytes): the socket's buffer is waited for between them. */
export function* slices(bytes: Uint8Array): Generator<Buffer> {
  for (let start = 0; start < bytes.byteLength; start += 1 << 20) {
    yield Buffer.from(bytes.buffer, bytes.byteOffset + start, Math.min(1 << 20, bytes.byteLength - start));
  }
}

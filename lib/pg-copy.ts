import { once } from 'node:events';
import type { WriteStream } from 'node:fs';
import type { Connection, PoolClient, Submittable } from 'pg';

/**
 * COPY over node-postgres, both ways, without an extra dependency: a Submittable that sends the COPY statement and
 * follows its protocol messages. `COPY … FROM STDIN` is fed from an iterable of chunks (the importers), `COPY … TO
 * STDOUT` writes each chunk to a file (the export editions, lib/parquet.ts).
 */

interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
  stream: NodeJS.WritableStream & NodeJS.ReadableStream & { writableNeedDrain?: boolean };
}

/** What both directions share: the statement sent, the row count of CommandComplete, the end or the error. */
abstract class Copy implements Submittable {
  readonly finished: Promise<number>;
  private settle!: (error: Error | null) => void;
  private rows = 0;
  protected failed: Error | null = null;
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
    this.finished = new Promise((resolve, reject) => {
      this.settle = (error) => (error ? reject(error) : resolve(this.rows));
    });
  }

  submit(connection: Connection): void {
    (connection as unknown as CopyConnection).query(this.text);
  }

  handleCommandComplete(message: { text?: string }): void {
    this.rows = Number(/(\d+)\s*$/.exec(message.text ?? '')?.[1] ?? 0);
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
  handleCopyInResponse(_connection: CopyConnection): void {}
  handleCopyData(_message: { chunk: Buffer }, _connection: Connection): void {}
}

class CopyFromStdin extends Copy {
  private readonly source: Iterable<Buffer | string> | AsyncIterable<Buffer | string>;

  constructor(text: string, source: Iterable<Buffer | string> | AsyncIterable<Buffer | string>) {
    super(text);
    this.source = source;
  }

  override handleCopyInResponse(connection: CopyConnection): void {
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

/** Bytes written to the file a mebibyte at a time. */
const BATCH = 1 << 20;

/** `COPY … TO STDOUT`: each chunk written to `out`; `flush` writes the last batch, the caller ends the file. */
export class CopyToStdout extends Copy {
  private paused = false;
  private batch = Buffer.allocUnsafe(BATCH);
  private used = 0;
  private readonly out: WriteStream;

  constructor(text: string, out: WriteStream) {
    super(text);
    this.out = out;
  }

  override handleCopyData(message: { chunk: Buffer }, connection: Connection): void {
    // The chunk is a view of the protocol parser's buffer, overwritten by the next message: copied into a batch of
    // our own, written a mebibyte at a time (one write per row would cost more than the copy).
    const chunk = message.chunk;
    if (this.used + chunk.length > this.batch.length) this.flush(connection);
    if (chunk.length > this.batch.length) {
      this.write(Buffer.from(chunk), connection);
      return;
    }
    chunk.copy(this.batch, this.used);
    this.used += chunk.length;
  }

  /** Writes what the batch holds; the caller ends the file after the last one. */
  flush(connection?: Connection): void {
    if (this.used === 0) return;
    this.write(this.batch.subarray(0, this.used), connection);
    this.batch = Buffer.allocUnsafe(BATCH);
    this.used = 0;
  }

  private write(bytes: Buffer, connection?: Connection): void {
    if (this.out.write(bytes) || this.paused || !connection) return;
    // The file is behind: stop reading the socket until it drains, so memory holds a few batches, not the table.
    const socket = (connection as unknown as CopyConnection).stream;
    this.paused = true;
    socket.pause();
    this.out.once('drain', () => {
      this.paused = false;
      socket.resume();
    });
  }
}

/** COPY data in slices of 1 MiB (views of the same bytes): the socket's buffer is waited for between them. */
export function* slices(bytes: Uint8Array): Generator<Buffer> {
  for (let start = 0; start < bytes.byteLength; start += 1 << 20) {
    yield Buffer.from(bytes.buffer, bytes.byteOffset + start, Math.min(1 << 20, bytes.byteLength - start));
  }
}

/**
 * A scripted OpenAI-compatible model on loopback, for CI's smoke run of `npm start`: it answers every structured
 * reading with the least instance of its schema and every Hub turn with a short text, at once. Prints
 * `OPENAI_BASE_URL=<url>` and serves until killed. Never a model for users: it reads nothing.
 */
import { schemaReply, startModelServer } from '../test/support/model-server.ts';

const server = await startModelServer(schemaReply);
console.log(`OPENAI_BASE_URL=${server.url}`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));

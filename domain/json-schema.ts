import { z } from 'zod';
import { billsItself, CreditsSchema, type Operation } from './catalogue.ts';

export type JsonSchema = Record<string, unknown>;

/**
 * A zod schema as JSON Schema 2020-12, the one conversion of the service: the OpenAPI description (api/openapi.ts)
 * and the tools (domain/outils.ts) publish the same schemas. `$schema` is left out: both say their dialect once.
 */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
  });
  return rest as JsonSchema;
}

/**
 * The JSON body a served call carries, whatever the transport: the operation's output with its `credits` block, or a
 * task's envelope, which carries the task's own.
 */
export function servedSchema(operation: Operation): z.ZodType {
  if (billsItself(operation)) return operation.output;
  return operation.output instanceof z.ZodObject
    ? operation.output.extend({ credits: CreditsSchema })
    : z.object({ credits: CreditsSchema });
}

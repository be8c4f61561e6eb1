import {
  effectOf,
  operationId,
  operationsByTool,
  pathParams,
  priceText,
  type Effect,
  type Operation,
} from './catalogue.ts';
import { jsonSchema, servedSchema, type JsonSchema } from './json-schema.ts';
import { accessRefusal, type Rights } from './platform/authenticate.ts';

/**
 * Every operation as a tool (rule 9 of the specification): what an MCP client lists and what the Hub offers its
 * model, made from the operation's declaration alone. A tool call is the operation called through the pipeline
 * (domain/invoke.ts) with the caller's key: the same checks, the same price, the same refusals.
 */

/** A tool as the Model Context Protocol describes one (`tools/list`). */
export interface Outil {
  /** The operation's name (its operationId): the same name over HTTP, MCP and in the Hub. */
  name: string;
  title: string;
  /** For a model: what it answers, its price, its limits. */
  description: string;
  /** The operation's flat input (path, query and body fields together), as JSON Schema 2020-12. */
  inputSchema: JsonSchema & { type: 'object' };
  /** The JSON the call answers, as over HTTP: the output with its `credits` block, or a task's envelope. */
  outputSchema: JsonSchema & { type: 'object' };
  annotations: {
    title: string;
    /** Changes nothing (`lecture`). */
    readOnlyHint: boolean;
    /** May replace or remove what was there (`ecriture`); meaningful when not read-only. */
    destructiveHint: boolean;
    /** The same call again changes nothing more (`lecture`, `ecriture`); meaningful when not read-only. */
    idempotentHint: boolean;
  };
}

/** Every operation is a tool, except those the specification keeps to REST (exports and downloads). */
export function estOutil(operation: Operation): boolean {
  return !operation.restOnly;
}

/**
 * A read operation: a tool that changes nothing (its declared effect, `lecture` for a GET), which the Hub may call
 * without being asked to. The others (webhooks, profile and memory changes, address validation, generated files)
 * are tools of the Hub only when a question names them.
 */
export function estLecture(operation: Operation): boolean {
  return estOutil(operation) && effectOf(operation) === 'lecture';
}

const EFFETS: Record<Effect, string> = {
  lecture: 'Lecture seule : ne change aucune donnée.',
  ajout: 'Ajoute à chaque appel : le même appel répété ajoute de nouveau.',
  ecriture: 'Modifie ou retire des données ; le même appel répété ne change rien de plus.',
};

/** The GET of a task operation's result (`/urbanisme/reglements/{tache}` for `/urbanisme/reglements`), if any. */
function resultOf(operation: Operation, operations: Operation[]): Operation | undefined {
  if (!operation.task || operation.method === 'GET') return undefined;
  return operations.find((o) => {
    const rest = o.path.startsWith(`${operation.path}/`) ? o.path.slice(operation.path.length + 1) : '';
    return o.task && o.method === 'GET' && /^\{\w+\}$/.test(rest);
  });
}

/** The POST that starts the tasks a task-reading GET reads, if any. */
function starterOf(operation: Operation, operations: Operation[]): Operation | undefined {
  if (!operation.task || operation.method !== 'GET') return undefined;
  return operations.find((o) => resultOf(o, operations) === operation);
}

/** The description a model reads: what the operation answers (its summary and lead), then its price and limits. */
function descriptionOf(operation: Operation, operations: Operation[]): string {
  // The lead paragraph says what the operation answers; the rest of the description (decisions, methods, edge
  // cases) stays in the OpenAPI description, which a model rarely needs and every tool list would otherwise carry.
  const lead = operation.description
    .split(/\n\s*\n/)[0]
    .replace(/\s*\n\s*/g, ' ')
    .trim();
  const lines = [`${operation.summary}. ${lead}`];
  if (operation.credits === 0) {
    lines.push('Prix : gratuit.');
  } else if (operation.task) {
    lines.push(
      `Prix : ${priceText(operation)}, réservés au départ de la tâche, débités si elle aboutit, rendus si elle échoue.`,
    );
  } else {
    lines.push(
      `Prix : ${priceText(operation)} ; rien n’est débité pour une ressource absente, un refus, un échec, ni pour une réponse identique servie à l’organisation dans les 24 h.`,
    );
  }
  lines.push(
    `Limites : délai ${operation.timeoutS} s ; portée \`${operation.scope}\`, palier \`${operation.tier}\` ; ${
      operation.sandbox
        ? 'bac à sable : une clé pk_test_ lit le jeu figé, sans débit'
        : 'pas de bac à sable (clé pk_live_)'
    }${operation.personalKey ? ' ; clé personnelle (attachée à un compte) requise' : ''}.`,
  );
  lines.push(EFFETS[effectOf(operation)]);
  const result = resultOf(operation, operations);
  if (result) {
    lines.push(
      `Répond une tâche : l’enveloppe {tache, resultat, erreur, credits}. \`tache.statut\` \`terminee\` porte \`resultat\`, \`echouee\` porte \`erreur\` ; sinon lire la tâche avec l’outil \`${operationId(result)}\` (\`tache\` = \`tache.id\`).`,
    );
  }
  const starter = starterOf(operation, operations);
  if (starter) lines.push(`Lit une tâche lancée par l’outil \`${operationId(starter)}\`.`);
  lines.push(
    'Réponse : le JSON de l’opération HTTP, avec son bloc `credits` (`debites`, `restants`). Un refus est un résultat en erreur qui porte son `code` stable (problème RFC 9457, voir /docs/erreurs).',
  );
  return lines.join('\n');
}

function objectSchema(operation: Operation, schema: JsonSchema, what: string): JsonSchema & { type: 'object' } {
  // MCP requires object schemas for both; the catalogue's shapes always are, and a declaration that is not is caught
  // when the app starts, not by a client.
  if (schema.type !== 'object') throw new Error(`${operationId(operation)} : ${what} n’est pas un objet JSON Schema.`);
  return schema as JsonSchema & { type: 'object' };
}

/**
 * The input of a tool of several ways: the union of their fields, each way's path parameters optional (the tool
 * takes exactly one way, wayOf in domain/catalogue.ts), the other fields required only where every way requires them.
 */
function unionInput(ways: Operation[], schemas: JsonSchema[]): JsonSchema & { type: 'object' } {
  if (schemas.length === 1) return schemas[0] as JsonSchema & { type: 'object' };
  const properties: Record<string, unknown> = {};
  for (const schema of schemas) {
    for (const [name, property] of Object.entries((schema.properties ?? {}) as object)) properties[name] ??= property;
  }
  const required = ((schemas[0]!.required as string[] | undefined) ?? []).filter((name) =>
    schemas.every((schema) => ((schema.required as string[] | undefined) ?? []).includes(name)),
  );
  const forms = ways.map(
    (way) => `\`${way.method} ${way.path}\` (${pathParams(way.path).join(', ') || 'sans paramètre de chemin'})`,
  );
  return {
    ...schemas[0],
    type: 'object',
    properties,
    required,
    description: `Une forme d’appel parmi : ${forms.join(' ; ')}.`,
  };
}

/**
 * The tool of an operation of `operations` (the catalogue, to name the tool that reads a task's result), with its
 * other ways (the variants of its path), named as the specification's catalogue names it.
 */
export function outilDe(operation: Operation, operations: Operation[], ways: Operation[] = [operation]): Outil {
  const effect = effectOf(operation);
  const outputs = ways.map((way) => objectSchema(way, jsonSchema(servedSchema(way), 'output'), 'la sortie'));
  const distinct = [...new Map(outputs.map((o) => [JSON.stringify(o), o])).values()];
  return {
    name: operation.tool,
    title: operation.summary,
    description: descriptionOf(operation, operations),
    inputSchema: unionInput(
      ways,
      ways.map((way) => objectSchema(way, jsonSchema(way.input, 'input'), 'l’entrée')),
    ),
    outputSchema: distinct.length === 1 ? distinct[0]! : { type: 'object', anyOf: distinct },
    annotations: {
      title: operation.summary,
      readOnlyHint: effect === 'lecture',
      destructiveHint: effect === 'ecriture',
      idempotentHint: effect !== 'ajout',
    },
  };
}

/**
 * The tools of a catalogue, made once (their JSON Schemas are not rebuilt per listing), and the ones a given key may
 * call.
 */
export function createOutils(operations: Operation[]) {
  const entries = [...operationsByTool(operations.filter(estOutil)).values()].map((ways) => ({
    operation: ways[0]!,
    outil: outilDe(ways[0]!, operations, ways),
  }));
  const byName = new Map(entries.map((e) => [e.outil.name, e.operation]));
  return {
    /** Every tool of the catalogue: one per operation, its several paths in one. */
    tous: entries.map((e) => e.outil),
    /** The operation a tool name calls (its main path); undefined for a name that is no tool. */
    operation: (name: string) => byName.get(name),
    /**
     * The tools a caller with these rights may call: the operations the pipeline admits, by the very rule it applies
     * (scope, personal key, tier, sandbox). Credits, caps and quota are checked when a tool is called.
     */
    permis(rights: Rights): Outil[] {
      return entries.filter((e) => !accessRefusal(rights, e.operation)).map((e) => e.outil);
    },
    /** The read operations among them: what the Hub offers its model when a question does not name its tools. */
    lectures(rights: Rights): Outil[] {
      return entries.filter((e) => estLecture(e.operation) && !accessRefusal(rights, e.operation)).map((e) => e.outil);
    },
  };
}

export type Outils = ReturnType<typeof createOutils>;

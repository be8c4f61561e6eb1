import type { z } from 'zod';

/** A part of a user message: text, or an image the model can see (when it can). */
export type ModelPart = { type: 'text'; text: string } | { type: 'image'; mime: string; base64: string };

export interface ModelRequest<T> {
  system: string;
  user: string | ModelPart[];
  /** The structured output asked for (json_schema, strict). */
  schema: z.ZodType<T>;
  schemaName: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** An OpenAI-compatible model, reached through the openai SDK (Chat Completions, structured outputs). */
export interface Model {
  /** The model name, as reported in results (`lecture.modele`). */
  name: string;
  complete<T>(request: ModelRequest<T>): Promise<T>;
}

export type ModelErrorKind = 'delai' | 'indisponible' | 'reponse_invalide' | 'refus' | 'configuration';

/** A failure of the model: `retryable` says whether trying again later can succeed (timeouts, 5xx, 429). */
export class ModelError extends Error {
  readonly kind: ModelErrorKind;
  readonly retryable: boolean;
  constructor(kind: ModelErrorKind, message: string, retryable: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelError';
    this.kind = kind;
    this.retryable = retryable;
  }
}

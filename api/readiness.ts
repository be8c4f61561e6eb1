/**
 * Whether the service serves yet: `/health` answers 503 with what is still loading (the sandbox and the
 * demonstration territory of a first `npm start`), then 200. A load balancer, a supervisor or a client that trusts
 * it never gets an answer from half-loaded data.
 */
export interface Readiness {
  /** What is still loading, said to whoever asks `/health`; null once the service serves. */
  readonly attente: string | null;
  /** The service serves. */
  pret(): void;
}

export function createReadiness(attente: string | null = null): Readiness {
  let enCours = attente;
  return {
    get attente() {
      return enCours;
    },
    pret() {
      enCours = null;
    },
  };
}

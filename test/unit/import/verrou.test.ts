import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { sousVerrouDeChargement } from '../../../domain/import/verrou.ts';
import { createTestDb } from '../../support/db.ts';

let t: { db: Db; drop(): Promise<void> };
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => t?.drop());

describe('the load lock', () => {
  it('makes a load started during another wait for it, saying so, never interleaving', async () => {
    const events: string[] = [];
    let waited = 0;
    const first = sousVerrouDeChargement(
      t.db,
      () => events.push('premier attend'),
      async () => {
        events.push('premier commence');
        await new Promise((resolve) => setTimeout(resolve, 300));
        events.push('premier finit');
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = sousVerrouDeChargement(
      t.db,
      () => (waited += 1),
      async () => {
        events.push('second commence');
        events.push('second finit');
      },
    );
    await Promise.all([first, second]);
    expect(waited).toBe(1);
    expect(events).toEqual(['premier commence', 'premier finit', 'second commence', 'second finit']);
    // Released: a third load takes it at once.
    let third = 0;
    await sousVerrouDeChargement(
      t.db,
      () => (third += 1),
      async () => {},
    );
    expect(third).toBe(0);
  });
});

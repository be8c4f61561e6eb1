import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resumeStalledTasks } from '../../domain/taches/reprise.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { POINTS } from '../support/plu-fixtures.ts';
import { createRuntime } from '../support/runtime.ts';

// An api that stops between writing a task (with its reservation) and starting its workflow: here, an engine whose
// start does nothing, as if the process had died right after the commit.
describe('a task whose start was cut short', () => {
  let runtime: Awaited<ReturnType<typeof createRuntime>>;
  let t: TestApp;

  beforeAll(async () => {
    runtime = await createRuntime();
    t = await createTestApp({ services: { tasks: { ...runtime.engine, start: async () => {} } } });
    await runtime.startWorker(t.db, null);
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
    await t?.close();
  });

  it('is started by the resumer, ends, and has its reservation settled once', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const started = await t.call('POST', '/urbanisme/reglements', org.cle, { ...POINTS.hors_zone });
    expect(started.statusCode).toBe(202);
    const id = started.json().tache.id;
    expect(started.json().tache.statut).toBe('en_attente');
    expect(started.json().credits).toEqual({ debites: 60, restants: 440 });

    // A task this recent may have a start under way in the api that wrote it: left alone.
    expect(await resumeStalledTasks({ db: t.db, engine: runtime.engine })).toBe(0);
    expect(await resumeStalledTasks({ db: t.db, engine: runtime.engine }, 0)).toBe(1);
    const done = await t.call('GET', `/urbanisme/reglements/${id}?attendre=30`, org.cle);
    expect(done.json().tache.statut).toBe('terminee');
    expect(done.json().resultat.statut).toBe('zone_absente');
    expect(done.json().credits).toEqual({ debites: 0, restants: 500 });

    // Starting it again (another instance's round, a late retry) runs nothing a second time.
    const { runId } = await runtime.client.workflow.getHandle(id).describe();
    await runtime.engine.start({ id, operation: 'lire_plu' });
    expect((await runtime.client.workflow.getHandle(id).describe()).runId).toBe(runId);
    expect(await resumeStalledTasks({ db: t.db, engine: runtime.engine }, 0)).toBe(0);
    const { rows } = await t.db.query('SELECT genre, credits FROM mouvements WHERE tache = $1 ORDER BY id', [id]);
    expect(rows).toEqual([
      { genre: 'reservation', credits: -60 },
      { genre: 'restitution', credits: 60 },
    ]);
  }, 60_000);
});

// The 202 does not wait for the workflow's start: a start the engine refuses must still end the task, and give its
// credits back, where the client looks for it (the envelope), instead of leaving it waiting with its credits held.
describe('a task whose start the engine refuses', () => {
  let t: TestApp;

  beforeAll(async () => {
    const refuse = async () => {
      throw new Error('Temporal injoignable');
    };
    t = await createTestApp({ services: { tasks: { start: refuse, cancel: refuse } } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('answers 202, then ends echouee (service_indisponible) with its reservation given back once', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const started = await t.call('POST', '/urbanisme/reglements', org.cle, { ...POINTS.hors_zone });
    expect(started.statusCode).toBe(202);
    const id = started.json().tache.id;
    const done = await t.call('GET', `/urbanisme/reglements/${id}?attendre=30`, org.cle);
    expect(done.json().tache.statut).toBe('echouee');
    expect(done.json().erreur.code).toBe('service_indisponible');
    expect(done.json().credits).toEqual({ debites: 0, restants: 500 });
    const { rows } = await t.db.query('SELECT genre, credits FROM mouvements WHERE tache = $1 ORDER BY id', [id]);
    expect(rows).toEqual([
      { genre: 'reservation', credits: -60 },
      { genre: 'restitution', credits: 60 },
    ]);
    // Nothing is left for the resumer: an ended task is never started again.
    expect(await resumeStalledTasks({ db: t.db, engine: { start: async () => {}, cancel: async () => {} } }, 0)).toBe(
      0,
    );
  }, 60_000);
});

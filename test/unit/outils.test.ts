import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineOperation, effectOf, operationId, wayOf, type Operation } from '../../domain/catalogue.ts';
import { ApiError } from '../../domain/errors.ts';
import { jsonSchema, servedSchema } from '../../domain/json-schema.ts';
import { OPERATIONS } from '../../domain/operations.ts';
import { createOutils, estLecture, estOutil, outilDe } from '../../domain/outils.ts';
import { accessRefusal, type Rights } from '../../domain/platform/authenticate.ts';

const outils = createOutils(OPERATIONS);
const names = (list: Array<{ name: string }>) => list.map((o) => o.name).sort();
const byName = (name: string) => OPERATIONS.find((o) => operationId(o) === name)!;

const ALL: Rights = {
  portees: [...new Set(OPERATIONS.map((o) => o.scope))],
  acces: 'contrat',
  sandbox: false,
  personnelle: true,
};

describe('tools from the catalogue', () => {
  it('makes one tool per operation, named as the catalogue names it, with its schemas as JSON Schema objects', () => {
    // Every operation but those served over REST only (exports), which are no tool.
    expect(names(outils.tous)).toEqual([...new Set(OPERATIONS.filter(estOutil).map((o) => o.tool))].sort());
    for (const operation of OPERATIONS.filter((o) => !o.variant && estOutil(o))) {
      const outil = outils.tous.find((o) => o.name === operation.tool)!;
      expect(outils.operation(outil.name)).toBe(operation);
      expect(outil.inputSchema.type).toBe('object');
      expect(outil.outputSchema.type).toBe('object');
      expect(outil.title).toBe(operation.summary);
      const ways = OPERATIONS.filter((o) => o.tool === operation.tool);
      if (ways.length > 1) continue;
      expect(outil.inputSchema).toEqual(jsonSchema(operation.input, 'input'));
      expect(outil.outputSchema).toEqual(jsonSchema(servedSchema(operation), 'output'));
    }
    expect(outils.operation('pas_un_outil')).toBeUndefined();
    // A path's variant is no tool of its own.
    expect(outils.operation('ventes_commune_code_postal')).toBeUndefined();
  });

  it('takes the ways of a tool of several paths as one input, each way’s fields and its own path parameter', () => {
    const ventes = outils.tous.find((o) => o.name === 'ventes_commune')!;
    expect(Object.keys(ventes.inputSchema.properties as object)).toEqual(
      expect.arrayContaining(['insee', 'code_postal']),
    );
    expect(ventes.inputSchema.required ?? []).not.toContain('insee');
    expect(ventes.inputSchema.description).toMatch(/codes-postaux\/\{code_postal\}/);
    const ways = OPERATIONS.filter((o) => o.tool === 'ventes_commune');
    expect(wayOf(ways, { code_postal: '33360' }).variant).toBe('code_postal');
    expect(wayOf(ways, { insee: '33234', annee: 2023 }).variant).toBeUndefined();
    const both = () => wayOf(ways, { insee: '33234', code_postal: '33360' });
    expect(both).toThrow(ApiError);
    expect(() => wayOf(ways, {})).toThrow(/une des formes/i);
    try {
      both();
    } catch (error) {
      expect((error as ApiError).code).toBe('parametres_invalides');
      expect((error as ApiError).erreurs?.map((e) => e.champ).sort()).toEqual(['code_postal', 'insee']);
    }
    // A way without path parameters and one with: the input that names the model takes the second.
    const modeles = OPERATIONS.filter((o) => o.tool === 'modeles');
    expect(wayOf(modeles, {}).variant).toBeUndefined();
    expect(wayOf(modeles, { modele: 'estimation' }).variant).toBe('modele');
  });

  it('has schemas the official SDK client compiles (it validates every structured result against its tool’s)', () => {
    const validator = new AjvJsonSchemaValidator();
    for (const outil of outils.tous) {
      expect(() => validator.getValidator(outil.outputSchema), outil.name).not.toThrow();
      expect(() => validator.getValidator(outil.inputSchema), outil.name).not.toThrow();
    }
  });

  it('tells a model what the operation answers, its price and unit, its limits', () => {
    const ventes = outils.tous.find((o) => o.name === 'ventes')!.description;
    expect(ventes).toContain('1 crédit(s) par élément renvoyé');
    expect(ventes).toContain('délai 15 s');
    expect(ventes).toContain('portée `adresse`');
    expect(ventes).toContain('pas de bac à sable');
    expect(ventes).toContain('Lecture seule');
    const plu = outils.tous.find((o) => o.name === 'lire_plu')!.description;
    expect(plu).toContain('60 crédit(s) par appel réussi, réservés au départ de la tâche');
    expect(plu).toContain('l’outil `resultat_lire_plu`');
    expect(outils.tous.find((o) => o.name === 'resultat_lire_plu')!.description).toContain('l’outil `lire_plu`');
    expect(outils.tous.find((o) => o.name === 'memoire')!.description).toContain('clé personnelle');
    expect(outils.tous.find((o) => o.name === 'taxe_amenagement')!.description).toContain(
      'bac à sable : une clé pk_test_',
    );
    // One paragraph of the description, not all of it: the rest stays in the OpenAPI description.
    for (const outil of outils.tous) expect(outil.description.length, outil.name).toBeLessThan(1500);
  });

  it('declares the effect of every operation that is not a GET: a body does not tell a read from a change', () => {
    const undeclared = OPERATIONS.filter((o) => o.method !== 'GET' && !o.effect).map(operationId);
    expect(undeclared).toEqual([]);
  });

  it('derives the read operations and the MCP hints from the declared effect', () => {
    const reads = OPERATIONS.filter(estLecture).map(operationId);
    // The operations with side effects are no read operations of the Hub.
    for (const name of [
      'webhooks_creer',
      'webhooks_supprimer',
      'webhooks_tester',
      'valider_adresse',
      'memoire_ajouter',
      'profil_investisseur_modifier',
      'generer_document',
    ]) {
      expect(reads, name).not.toContain(name);
    }
    // Computations and long reads sent with a body are.
    for (const name of ['taxe_amenagement', 'lire_plu', 'lire_document', 'resoudre_adresse', 'ventes_adresse']) {
      expect(reads, name).toContain(name);
    }
    for (const outil of outils.tous) {
      const effect = effectOf(byName(outil.name));
      expect(outil.annotations, outil.name).toEqual({
        title: outil.title,
        readOnlyHint: effect === 'lecture',
        destructiveHint: effect === 'ecriture',
        idempotentHint: effect !== 'ajout',
      });
    }
    expect(byName('webhooks_supprimer').effect).toBe('ecriture');
    expect(byName('webhooks_creer').effect).toBe('ajout');
  });

  it('takes an operation that declares nothing for the worst, and keeps a REST-only operation out of the tools', () => {
    const base = {
      path: '/essai',
      summary: 'Essai',
      description: 'Essai.',
      credits: 1,
      unit: 'appel' as const,
      scope: 'territoire' as const,
      tier: 'usage' as const,
      sandbox: false,
      cacheS: 0,
      timeoutS: 1,
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      handler: async () => ({ ok: true }),
    };
    const lecture = defineOperation({ ...base, tool: 'lire_essai', method: 'GET' }) as Operation;
    const silencieux = defineOperation({ ...base, tool: 'poster_essai', method: 'POST' }) as Operation;
    const exporter = defineOperation({ ...base, tool: 'exporter_essai', method: 'GET', restOnly: true }) as Operation;
    expect(outilDe(lecture, [lecture]).annotations).toMatchObject({ readOnlyHint: true });
    expect(outilDe(silencieux, [silencieux]).annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
    });
    expect(estLecture(silencieux)).toBe(false);
    expect(estOutil(exporter)).toBe(false);
    expect(estLecture(exporter)).toBe(false);
    const own = createOutils([lecture, silencieux, exporter]);
    expect(names(own.tous)).toEqual(['lire_essai', 'poster_essai']);
    expect(own.operation('exporter_essai')).toBeUndefined();
  });
});

describe('the tools a key may call', () => {
  it('are the operations the pipeline admits for its rights: scope, personal key, tier, sandbox', () => {
    expect(names(outils.permis(ALL))).toEqual(
      OPERATIONS.filter((o) => !o.variant && estOutil(o))
        .map(operationId)
        .sort(),
    );
    const cases: Array<[Partial<Rights>, (o: Operation) => boolean]> = [
      [{ portees: ['adresse'] }, (o) => o.scope === 'adresse'],
      [{ personnelle: false }, (o) => !o.personalKey],
      [{ acces: 'usage' }, (o) => o.tier === 'usage'],
      [{ sandbox: true }, (o) => o.sandbox],
      [{ portees: ['compte'], personnelle: false }, () => false],
    ];
    for (const [change, expected] of cases) {
      const rights = { ...ALL, ...change };
      const listed = names(outils.permis(rights));
      // One tool per operation: its main path stands for its variants, which are admitted alike.
      expect(listed, JSON.stringify(change)).toEqual(
        OPERATIONS.filter((o) => !o.variant && estOutil(o) && expected(o))
          .map(operationId)
          .sort(),
      );
      // The very rule of the pipeline's admission: what is listed is admitted, what is not is refused.
      for (const operation of OPERATIONS.filter(estOutil)) {
        expect(accessRefusal(rights, operation) === null, operationId(operation)).toBe(listed.includes(operation.tool));
      }
    }
  });

  it('offers the Hub the read operations among them only', () => {
    const lectures = names(outils.lectures(ALL));
    const principales = OPERATIONS.filter((o) => !o.variant);
    expect(lectures).toEqual(principales.filter(estLecture).map(operationId).sort());
    expect(lectures).not.toContain('webhooks_creer');
    const adresse = names(outils.lectures({ ...ALL, portees: ['adresse'] }));
    expect(adresse).toEqual(
      principales
        .filter((o) => o.scope === 'adresse' && estLecture(o))
        .map(operationId)
        .sort(),
    );
  });
});

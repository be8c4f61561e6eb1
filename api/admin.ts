import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { exigerEntree, nombre } from '../domain/entrees.ts';
import { ApiError } from '../domain/errors.ts';
import {
  CreditGrantSchema,
  KeyCreateSchema,
  OrganisationCreateSchema,
  OrganisationPatchSchema,
  type Accounts,
} from '../domain/platform/accounts.ts';
import { balanceOf, movements } from '../domain/platform/ledger.ts';
import { definirPerimetreExport, lirePerimetreExport, PerimetreExportSchema } from '../domain/exports/perimetre.ts';
import type { Db } from '../db/client.ts';
import type { Cursors } from '../lib/cursor.ts';
import { safeEqual } from '../lib/crypto.ts';

const IdParams = z.object({ id: z.uuid('identifiant uuid attendu') });
const ReleveQuery = z.object({
  limite: nombre(z.number().int().min(1).max(200).default(50)),
  curseur: z.string().min(1).max(1024).optional(),
});

function parse<S extends z.ZodType>(
  schema: S,
  value: unknown,
  emplacement: 'chemin' | 'requete' | 'corps',
): z.output<S> {
  return exigerEntree(schema, value === undefined ? {} : value, () => emplacement);
}

/**
 * The admin API (/admin/v1): organisations, keys, credits and the ledger. Bearer ADMIN_TOKEN, compared in constant
 * time; registered only when ADMIN_TOKEN is set (otherwise every admin path answers 404).
 */
export function registerAdmin(
  app: FastifyInstance,
  deps: { db: Db; accounts: Accounts; cursors: Cursors; adminToken: string; onChange: () => void },
) {
  app.register(
    async (admin) => {
      admin.addHook('onRequest', async (request: FastifyRequest) => {
        const header = request.headers.authorization;
        if (!header) throw new ApiError('cle_absente', 'En-tête Authorization absent : « Bearer <ADMIN_TOKEN> ».');
        const token = /^Bearer[ ]+(\S+)$/i.exec(header)?.[1] ?? '';
        if (!safeEqual(token, deps.adminToken)) throw new ApiError('cle_invalide', 'Jeton d’administration invalide.');
      });
      // Every change through the admin API is seen at once by this process's authentication.
      admin.addHook('onResponse', async (request) => {
        if (request.method !== 'GET') deps.onChange();
      });

      admin.post('/organisations', async (request, reply) => {
        const org = await deps.accounts.createOrganisation(parse(OrganisationCreateSchema, request.body, 'corps'));
        return reply.code(201).send(org);
      });

      admin.get('/organisations/:id', async (request) => {
        const { id } = parse(IdParams, request.params, 'chemin');
        const org = await deps.accounts.getOrganisation(id);
        return { ...org, solde: await balanceOf(deps.db, id, null) };
      });

      admin.patch('/organisations/:id', async (request) => {
        const { id } = parse(IdParams, request.params, 'chemin');
        return deps.accounts.updateOrganisation(id, parse(OrganisationPatchSchema, request.body, 'corps'));
      });

      admin.post('/organisations/:id/cles', async (request, reply) => {
        const { id } = parse(IdParams, request.params, 'chemin');
        const key = await deps.accounts.createKey(id, parse(KeyCreateSchema, request.body, 'corps'));
        reply.header('Cache-Control', 'no-store');
        return reply
          .code(201)
          .send({ ...key, note: 'La clé en clair n’est montrée qu’ici : conservez-la maintenant.' });
      });

      admin.post('/cles/:id/revocation', async (request) => {
        const { id } = parse(IdParams, request.params, 'chemin');
        return deps.accounts.revokeKey(id);
      });

      admin.post('/organisations/:id/credits', async (request) => {
        const { id } = parse(IdParams, request.params, 'chemin');
        return deps.accounts.grantCredits(id, parse(CreditGrantSchema, request.body, 'corps'));
      });

      // The datasets whose export the organisation's contract opens (domain/exports/perimetre.ts): set whole, each
      // opening and closing kept with its date and reason.
      admin.put('/organisations/:id/exports', async (request) => {
        const { id } = parse(IdParams, request.params, 'chemin');
        const demande = parse(PerimetreExportSchema, request.body, 'corps');
        await deps.accounts.getOrganisation(id);
        return definirPerimetreExport(deps.db, id, demande);
      });

      admin.get('/organisations/:id/exports', async (request) => {
        const { id } = parse(IdParams, request.params, 'chemin');
        await deps.accounts.getOrganisation(id);
        return lirePerimetreExport(deps.db, id);
      });

      admin.get('/organisations/:id/releve', async (request) => {
        const { id } = parse(IdParams, request.params, 'chemin');
        const { limite, curseur } = parse(ReleveQuery, request.query, 'requete');
        await deps.accounts.getOrganisation(id);
        const scope = `releve:${id}`;
        let avant: number | null = null;
        if (curseur) {
          avant = deps.cursors.decode<number>(scope, curseur);
          if (avant === null) {
            throw new ApiError('parametres_invalides', 'Curseur invalide.', {
              erreurs: [{ champ: 'curseur', emplacement: 'requete', message: 'curseur inconnu ou altéré' }],
            });
          }
        }
        const { page, next } = await movements(deps.db, id, limite, avant);
        return {
          organisation_id: id,
          solde: await balanceOf(deps.db, id, null),
          mouvements: page,
          curseur_suivant: next === null ? null : deps.cursors.encode(scope, next),
        };
      });
    },
    { prefix: '/admin/v1' },
  );
}

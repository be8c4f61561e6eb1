import { effectOf } from '../catalogue.ts';
import { ApiError, ERRORS } from '../errors.ts';
import type { Pipeline } from '../invoke.ts';
import type { Outils } from '../outils.ts';
import type { ModelTool } from '../../lib/model.ts';
import { accessRefusal } from '../platform/authenticate.ts';
import { OUTIL_MEMOIRE } from './agent.ts';

/**
 * The Hub's hands: the tools a key's questions may be offered (the read operations it may call, and the memory;
 * never the Hub's own operations, nor those that need a task engine where `taches` is false: they could only
 * refuse), and their calls through the one pipeline, with the key's id.
 */
export function outilsDuHub(pipeline: Pipeline, outils: Outils, { taches }: { taches: boolean }) {
  const horsHub = (name: string) => {
    const operation = outils.operation(name);
    return operation?.scope === 'hub' || (!taches && (operation?.task === true || operation?.needsTaskEngine === true));
  };
  /** The key's rights, or null once it is revoked or unknown: a question under way then offers and runs nothing more. */
  const droits = (cleId: string) =>
    pipeline.rights({ cleId }).catch((error: unknown) => {
      if (error instanceof ApiError && ERRORS[error.code].status === 401) return null;
      throw error;
    });
  return {
    /** What a tool does that the Hub must know of: whether it writes, whether its output holds third-party text. */
    nature(tool: string): { ecrit: boolean; texteTiers: boolean } {
      const operation = outils.operation(tool);
      return {
        ecrit: !operation || effectOf(operation) !== 'lecture',
        texteTiers: operation?.texteTiers === true,
      };
    },
    invoke: (
      cleId: string,
      tool: string,
      input: unknown,
      options: { billingKey: string; creditCap: number; requestId: string },
    ) => pipeline.invoke({ cleId }, tool, input, options),
    async outils(cleId: string): Promise<ModelTool[]> {
      const rights = await droits(cleId);
      if (!rights) return [];
      const memoire = outils.permis(rights).filter((o) => o.name === OUTIL_MEMOIRE);
      return [...outils.lectures(rights), ...memoire]
        .filter((o) => !horsHub(o.name))
        .map((o) => ({ name: o.name, description: o.description, parameters: o.inputSchema }));
    },
    /**
     * Why a tool the question was not offered is not run: the code a direct call of the key would get (scope, tier,
     * sandbox), else why the question leaves it out.
     */
    async refus(cleId: string, tool: string, autorises: string[] | null): Promise<{ code: string; detail: string }> {
      const operation = outils.operation(tool);
      if (!operation || horsHub(tool))
        return { code: 'ressource_absente', detail: `Aucun outil « ${tool} » pour le Hub.` };
      const rights = await droits(cleId);
      if (!rights) return { code: 'cle_invalide', detail: 'La clé de la question a été révoquée pendant la question.' };
      const refusal = accessRefusal(rights, operation);
      if (refusal) return { code: refusal.code, detail: refusal.message };
      const detail =
        autorises && !autorises.includes(tool)
          ? `L’outil « ${tool} » n’est pas dans \`outils_autorises\` de cette question.`
          : `L’outil « ${tool} » modifie des données ou n’est pas parmi ceux offerts à ce tour : nommez-le dans \`outils_autorises\`.`;
      return { code: 'portee_insuffisante', detail };
    },
  };
}

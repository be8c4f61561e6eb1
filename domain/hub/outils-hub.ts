import type { Pipeline } from '../invoke.ts';
import type { Outils } from '../outils.ts';
import type { ModelTool } from '../../lib/model.ts';
import { accessRefusal } from '../platform/authenticate.ts';
import { OUTIL_MEMOIRE } from './agent.ts';

/**
 * The Hub's hands: the tools a key's questions may be offered (the read operations it may call, and the memory;
 * never the Hub's own operations), and their calls through the one pipeline, with the key's id.
 */
export function outilsDuHub(pipeline: Pipeline, outils: Outils) {
  const duHub = (name: string) => outils.operation(name)?.scope === 'hub';
  return {
    invoke: (
      cleId: string,
      tool: string,
      input: unknown,
      options: { billingKey: string; creditCap: number; requestId: string },
    ) => pipeline.invoke({ cleId }, tool, input, options),
    async outils(cleId: string): Promise<ModelTool[]> {
      const rights = await pipeline.rights({ cleId });
      const memoire = outils.permis(rights).filter((o) => o.name === OUTIL_MEMOIRE);
      return [...outils.lectures(rights), ...memoire]
        .filter((o) => !duHub(o.name))
        .map((o) => ({ name: o.name, description: o.description, parameters: o.inputSchema }));
    },
    /**
     * Why a tool the question was not offered is not run: the code a direct call of the key would get (scope, tier,
     * sandbox), else why the question leaves it out.
     */
    async refus(cleId: string, tool: string, autorises: string[] | null): Promise<{ code: string; detail: string }> {
      const operation = outils.operation(tool);
      if (!operation || duHub(tool))
        return { code: 'ressource_absente', detail: `Aucun outil « ${tool} » pour le Hub.` };
      const refusal = accessRefusal(await pipeline.rights({ cleId }), operation);
      if (refusal) return { code: refusal.code, detail: refusal.message };
      const detail =
        autorises && !autorises.includes(tool)
          ? `L’outil « ${tool} » n’est pas dans \`outils_autorises\` de cette question.`
          : `L’outil « ${tool} » modifie des données ou n’est pas parmi ceux offerts à ce tour : nommez-le dans \`outils_autorises\`.`;
      return { code: 'portee_insuffisante', detail };
    },
  };
}

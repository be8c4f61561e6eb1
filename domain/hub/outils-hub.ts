import type { Pipeline } from '../invoke.ts';
import type { Outils } from '../outils.ts';
import type { ModelTool } from '../../lib/model.ts';
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
  };
}

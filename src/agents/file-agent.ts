// What an agent loaded from a Claude-format file (loadAgents) carries besides its options: an
// enumerable symbol key, so it survives the copies the assembly makes of the options (narrowed,
// hardened) and is never taken for an unknown option.

import type { AgentDefinition } from "./agent.ts";

/** The mark on the options of an agent loaded from a file. */
export const FILE_AGENT: unique symbol = Symbol.for("skein.fileAgent");

export interface FileAgentMark {
  /** The file it came from. */
  file: string;
  /** The file's `description`: what `agentTool(definition)` tells the model. */
  description: string;
  /** `model: inherit` or no model: a child run takes its parent's model. */
  inheritModel: boolean;
}

/** A definition from `loadAgents`: `agentTool(definition)` takes its name and description from the file. */
export type FileAgentDefinition = AgentDefinition & { readonly [FILE_AGENT]: FileAgentMark };

/** The mark of options loaded from a file, or undefined. */
export function fileAgentOf(options: unknown): FileAgentMark | undefined {
  if (typeof options !== "object" || options === null) return undefined;
  return (options as { [FILE_AGENT]?: FileAgentMark })[FILE_AGENT];
}

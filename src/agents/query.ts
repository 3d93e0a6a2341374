// query(): the one-shot streaming form, an agent made for one run.

import { assertKnownOptions, QUERY_OPTION_KEYS } from "../core/options.ts";
import type {
  AgentOptions,
  OutputOf,
  OutputSchema,
  RunOptions,
  Steering,
} from "../run/agent-options.ts";
import type { Prompt } from "../run/user-content.ts";
import type { AgentRun } from "./agent.ts";
import { createAgent } from "./assemble.ts";

export interface QueryOptions<S extends OutputSchema | undefined = OutputSchema | undefined>
  extends AgentOptions<S> {
  prompt: Prompt;
  signal?: AbortSignal | undefined;
  sessionId?: string | undefined;
  steering?: Steering | undefined;
}

/** The one-shot streaming form: `for await (const event of query({ prompt, model, tools }))`. */
export function query<S extends OutputSchema | undefined = undefined>(
  options: QueryOptions<S>,
): AgentRun<OutputOf<S>> {
  assertKnownOptions("AgentOptions", options, QUERY_OPTION_KEYS);
  const { prompt, signal, sessionId, steering, ...agentOptions } = options;
  const runOptions: RunOptions = {};
  if (signal !== undefined) runOptions.signal = signal;
  if (sessionId !== undefined) runOptions.sessionId = sessionId;
  if (steering !== undefined) runOptions.steering = steering;
  const agent = createAgent(agentOptions as AgentOptions<S>);
  const run = agent.stream(prompt, runOptions);
  if (agentOptions.mcpServers === undefined) return run;
  // A one-shot query owns its MCP servers: they end with its stream.
  async function* closing() {
    try {
      yield* run;
    } finally {
      await agent.close();
    }
  }
  return Object.assign(closing(), {
    steer: run.steer,
    followUp: run.followUp,
    setPermissionMode: run.setPermissionMode,
  });
}

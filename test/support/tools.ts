/** Custom tools for tests that count what ran. */
import { type ToolDefinition, tool } from "skein";
import { z } from "zod";

/** A custom tool `{ target: string }` that records each run and answers `<name> ran on <target>`. */
export interface CountingTool {
  tool: ToolDefinition;
  /** The targets it ran on, in order. */
  runs: string[];
  /** The ids of the calls it ran, in order. */
  callIds: string[];
}

/**
 * `ruleContent` (on unless false) makes its target what pattern rules such as `deploy(staging)`
 * match; `security` and `idempotent` are passed on to `tool()`.
 */
export function countingTool(
  name: string,
  options: {
    ruleContent?: boolean;
    security?: ToolDefinition["security"];
    idempotent?: boolean;
  } = {},
): CountingTool {
  const runs: string[] = [];
  const callIds: string[] = [];
  const definition = tool(
    name,
    `The ${name} tool`,
    z.object({ target: z.string() }),
    async ({ target }, context) => {
      runs.push(target);
      callIds.push(context.callId);
      return `${name} ran on ${target}`;
    },
    {
      ...(options.ruleContent === false ? {} : { ruleContent: (input) => input.target }),
      ...(options.security ? { security: options.security } : {}),
      ...(options.idempotent !== undefined ? { idempotent: options.idempotent } : {}),
    },
  );
  return { tool: definition, runs, callIds };
}

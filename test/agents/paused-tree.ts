/** A paused two-level tree (parent -> child whose call asks), shared by the pause/resume files. */
import { type AgentOptions, agentTool, createBareAgent, type RunState } from "skein";
import { scriptedModel } from "skein/testing";
import { expect } from "vitest";
import { countingTool } from "../support/tools.ts";
import { turn } from "./helpers.ts";

/**
 * parent: one reply with n1 (note, allowed) and p1 (the child). child: one reply with c1 (note,
 * allowed) and c2 (risky, asks), then "child done". No approval handler on the parent.
 */
export function twoLevels(
  parentOptions: Partial<AgentOptions> = {},
  childOptions: Partial<AgentOptions> = {},
) {
  const note = countingTool("note");
  const risky = countingTool("risky");
  const childModel = scriptedModel([
    turn(
      {
        toolCalls: [
          { id: "c1", name: "note", input: { target: "child-note" } },
          { id: "c2", name: "risky", input: { target: "launch" } },
        ],
      },
      10,
      1,
    ),
    turn({ text: "child done" }, 20, 2),
  ]);
  const child = createBareAgent({
    id: "child",
    model: childModel,
    tools: [note.tool, risky.tool],
    permissions: { ask: ["risky"] },
    ...childOptions,
  });
  const model = scriptedModel([
    turn(
      {
        toolCalls: [
          { id: "n1", name: "note", input: { target: "parent-note" } },
          { id: "p1", name: "child", input: { prompt: "do it" } },
        ],
      },
      1,
      1,
    ),
    turn({ text: "parent done" }, 2, 2),
  ]);
  const parent = createBareAgent({
    model,
    tools: [note.tool, agentTool(child, { description: "Does it" })],
    ...parentOptions,
  });
  return { parent, model, childModel, note, risky };
}

export async function pausedTwoLevels(
  parentOptions: Partial<AgentOptions> = {},
  childOptions: Partial<AgentOptions> = {},
) {
  const setup = twoLevels(parentOptions, childOptions);
  const paused = await setup.parent.run("go");
  expect(paused.subtype).toBe("paused");
  const state = () => JSON.parse(JSON.stringify(paused.state)) as RunState;
  return { ...setup, paused, state };
}

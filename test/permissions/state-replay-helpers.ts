import {
  type AgentOptions,
  createBareAgent,
  defineTool,
  type PermissionResult,
  ResumeError,
  type RunState,
  type ToolUseBlock,
} from "skein";
import { scriptedModel } from "skein/testing";
import { expect } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { countingTool } from "../support/tools.ts";

/*
 * A paused run whose state an attacker edits as JSON before the app resumes it. Everything that
 * could be a side effect is counted: handlers, the three hooks, the approval handler, the app's
 * response hook, and model calls.
 */

type PausedCall = NonNullable<RunState["batch"]>["calls"][number];

export interface Counters {
  safe: string[];
  risky: string[];
  responses: number;
  before: string[];
  after: string[];
  results: string[];
  approvals: number;
}

export interface CallSpec {
  id: string;
  name: string;
  input: unknown;
}

/** `safe` runs unasked, `risky` asks (no handler: the run pauses), `ext` waits for the app. */
export async function pausedBatch(calls: CallSpec[], sessionId?: string) {
  const safe = countingTool("safe");
  const risky = countingTool("risky");
  const counts: Counters = {
    safe: safe.runs,
    risky: risky.runs,
    responses: 0,
    before: [],
    after: [],
    results: [],
    approvals: 0,
  };
  const ext = defineTool({
    id: "ext",
    parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    execute: false,
    onResponseReceived: (response) => {
      counts.responses++;
      return String(response);
    },
  });
  const model = scriptedModel([{ toolCalls: calls }, { text: "done" }]);
  const options: AgentOptions = {
    model,
    tools: [safe.tool, risky.tool, ext],
    permissions: { ask: ["risky"] },
    hooks: {
      beforeToolCall: ({ callId }) => {
        counts.before.push(callId);
      },
      afterToolCall: ({ callId }) => {
        counts.after.push(callId);
      },
      onToolResult: ({ callId }) => {
        counts.results.push(callId);
      },
    },
  };
  const result = await createBareAgent(options).run("go", sessionId ? { sessionId } : {});
  expect(result.subtype).toBe("paused");
  const atPause = structuredClone(counts);
  const fresh = () => JSON.parse(JSON.stringify(result.state)) as RunState;
  // The resuming agent has an approval handler: it must not be asked either.
  const resumer = () =>
    createBareAgent({
      ...options,
      approval: () => {
        counts.approvals++;
        return true;
      },
    });
  return { options, model, counts, atPause, fresh, resumer };
}

export type Setup = Awaited<ReturnType<typeof pausedBatch>>;

/** Resuming `state` rejects with `ResumeError`, and nothing ran: no handler, hook or model call. */
export async function expectRefused(
  setup: Setup,
  state: RunState,
  options: { approvals?: Record<string, PermissionResult>; toolOutputs?: Record<string, unknown> },
  message?: RegExp,
): Promise<void> {
  const error = await rejectionOf(setup.resumer().resume(state, options));
  expect(error).toBeInstanceOf(ResumeError);
  expect(error.name).toBe("ResumeError");
  if (message) expect(error.message).toMatch(message);
  expect(setup.counts).toEqual(setup.atPause);
  expect(setup.model.requests).toHaveLength(1);
}

/** The paused batch's assistant message, its content as tool_use blocks (all it holds here). */
export function lastMessage(state: RunState): { role: "assistant"; content: ToolUseBlock[] } {
  return state.messages.at(-1) as unknown as { role: "assistant"; content: ToolUseBlock[] };
}

export function callIn(state: RunState, id: string): PausedCall & Record<string, unknown> {
  const call = state.batch!.calls.find((entry) => entry.id === id);
  if (!call) throw new Error(`no call ${id}`);
  return call as PausedCall & Record<string, unknown>;
}

/**
 * What a thorough attacker does after editing the batch or the last message: make the steps tell
 * the same story, so only what the attacker cannot recompute (the seals) can give the edit away.
 */
export function coverTracks(state: RunState): RunState {
  const step = state.steps.at(-1)!;
  step.message = structuredClone(state.messages.at(-1)!);
  step.toolCalls = state.batch!.calls.flatMap((call) =>
    call.status === "done"
      ? [
          {
            callId: call.id,
            name: call.name,
            input: call.input,
            result: call.result,
            isError: call.isError,
            preliminaryResults: call.preliminaryResults,
          },
        ]
      : [],
  );
  state.numTurns = state.steps.length;
  return state;
}

/**
 * Errors never pose as answers: on every error subtype the engine produces, `result.result` is
 * the empty string and what went wrong is in `result.error` (name and message), in the stream's
 * result event and in the session log's end alike. A child agent's failure still says why.
 */
import {
  agentTool,
  createBareAgent,
  type Model,
  type ModelStreamEvent,
  memoryStore,
  type SDKResultMessage,
  type SessionStore,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { collect } from "../interactive/helpers.ts";
import { deferred } from "../support/promises.ts";

const ping = tool("ping", "Ping", z.object({}), async () => "pong");

function expectError(result: SDKResultMessage, subtype: string, name: string, says: RegExp) {
  expect(result.subtype).toBe(subtype);
  expect(result.isError).toBe(true);
  expect(result.result).toBe("");
  expect(result.error?.name).toBe(name);
  expect(result.error?.message).toMatch(says);
}

/** A model that writes some text, then fails. */
const failingMidText: Model = {
  provider: "test",
  modelId: "flaky",
  async *stream(): AsyncGenerator<ModelStreamEvent> {
    yield { type: "text_delta", text: "The answer is definitely 4" };
    throw Object.assign(new Error("connection reset"), { status: 502 });
  },
};

describe("each error subtype: empty result, the error in error", () => {
  it("error_max_turns: MaxTurnsError says how many calls and what to do; the state is kept", async () => {
    const model = scriptedModel(() => ({ toolCalls: [{ name: "ping", input: {} }] }));
    const result = await createBareAgent({ model, tools: [ping], maxTurns: 2 }).run("loop");
    expectError(result, "error_max_turns", "MaxTurnsError", /after 2 model calls \(maxTurns 2\)/);
    expect(result.error!.message).toMatch(/higher maxTurns/);
    expect(result.state).toBeDefined();
  });

  it("a model that fails after some text: the partial text is not the result", async () => {
    const { result } = await collect(createBareAgent({ model: failingMidText }).stream("go"));
    expectError(result, "error_during_execution", "Error", /connection reset/);
    expect(result.messages.at(-1)).toMatchObject({ role: "assistant", incomplete: true });
  });

  it("a model whose script ran out (ScriptExhaustedError)", async () => {
    const model = scriptedModel([{ toolCalls: [{ name: "ping", input: {} }] }]);
    const result = await createBareAgent({ model, tools: [ping] }).run("go");
    expectError(result, "error_during_execution", "ScriptExhaustedError", /script has only 1/);
  });

  it("output retries exhausted (OutputValidationError)", async () => {
    const model = scriptedModel([{ text: "Paris" }]);
    const result = await createBareAgent({
      model,
      output: z.object({ city: z.string() }),
      outputRetries: 0,
    }).run("Which city?");
    expectError(result, "error_during_execution", "OutputValidationError", /final_output/);
  });

  it("a fail_run tool timeout (ToolTimeoutError)", async () => {
    const late = deferred<string>();
    const strict = tool("strict", "Strict", z.object({}), () => late.promise, {
      timeoutMs: 20,
      timeoutBehavior: "fail_run",
    });
    const model = scriptedModel([{ toolCalls: [{ id: "s", name: "strict", input: {} }] }]);
    const result = await createBareAgent({ model, tools: [strict] }).run("go");
    late.resolve("late");
    expectError(result, "error_during_execution", "ToolTimeoutError", /strict/);
  });

  it("a session log that cannot take the run's end (SessionStoreError), with the model's answer given", async () => {
    const inner = memoryStore();
    const store: SessionStore = {
      append: async (sessionId, seq, entries) => {
        if (entries.some((entry) => entry.includes('"type":"end"'))) throw new Error("disk full");
        return inner.append(sessionId, seq, entries);
      },
      read: (sessionId, options) => inner.read(sessionId, options),
      list: () => inner.list(),
      delete: (sessionId) => inner.delete(sessionId),
      close: () => inner.close(),
    };
    const model = scriptedModel([{ text: "The answer is 4." }]);
    const result = await createBareAgent({ model, sessionStore: store }).run("2+2?", {
      sessionId: "s",
    });
    expectError(result, "error_during_execution", "SessionStoreError", /disk full/);
  });

  it("the stream's result event and the session log's end say the same", async () => {
    const store = memoryStore();
    const model = scriptedModel(() => ({ toolCalls: [{ name: "ping", input: {} }] }));
    const { result } = await collect(
      createBareAgent({ model, tools: [ping], maxTurns: 1, sessionStore: store }).stream("loop", {
        sessionId: "s",
      }),
    );
    expectError(result, "error_max_turns", "MaxTurnsError", /maxTurns 1/);
    const end = (await store.read("s"))
      .map((row) => JSON.parse(row.data))
      .find((entry) => entry.type === "end");
    expect(end).toMatchObject({ subtype: "error_max_turns", result: "", error: result.error });
  });
});

describe("a child agent's failure", () => {
  it("reaches the parent as an error result that says why, from the child's error", async () => {
    const child = createBareAgent({
      id: "looper",
      model: scriptedModel(() => ({ toolCalls: [{ name: "ping", input: {} }] })),
      tools: [ping],
      maxTurns: 1,
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "a1", name: "looper", input: { prompt: "loop" } }] },
      { text: "The helper gave up." },
    ]);
    const result = await createBareAgent({
      model,
      tools: [agentTool(child, { name: "looper", description: "Loops" })],
    }).run("go");
    expect(result.subtype).toBe("success");
    const call = result.steps[0]!.toolCalls[0]!;
    expect(call.isError).toBe(true);
    expect(call.result.content).toMatch(
      /^Agent "looper" failed: The run stopped after 1 model calls/,
    );
  });
});

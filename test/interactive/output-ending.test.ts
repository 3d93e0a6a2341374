/**
 * Typed output is typed: with `output`, a run succeeds only with a value the schema accepts.
 * A tool result that ends the run (`endTurn`, every result of a batch `terminate`, an
 * `afterToolCall` stop) ends it with its `structuredResult` when that passes the schema; without
 * one, or with one the schema refuses, it is an invalid answer: the model is told what was wrong
 * and answers again, within `outputRetries`; then the run fails with OutputValidationError.
 */
import { createBareAgent, loadSession, memoryStore, type SessionStore, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript } from "../support/results.ts";
import { textOf } from "./helpers.ts";

const City = z.object({ city: z.string(), population: z.number().int().optional() });

/** A tool that ends the run with whatever it is told to return as its ToolResult. */
function ender(returns: Record<string, unknown>, name = "finish") {
  return tool(name, "Finishes the task", z.object({}), () => ({
    content: "finished",
    ...returns,
  }));
}

const call = (id: string, name: string, input: unknown = {}) => ({ id, name, input });
const finalOutput = (id: string, input: unknown) => ({
  toolCalls: [call(id, "final_output", input)],
});

describe("endTurn under output", () => {
  it("a structuredResult the schema accepts is the answer: success, structuredResult, its JSON as result", async () => {
    const model = scriptedModel([{ toolCalls: [call("t1", "finish")] }]);
    const agent = createBareAgent({
      model,
      tools: [ender({ endTurn: true, structuredResult: { city: "Oslo" } })],
      output: City,
    });
    const result = await agent.run("Which city?");
    expect(result.subtype).toBe("success");
    expect(result.structuredResult).toEqual({ city: "Oslo" });
    expect(JSON.parse(result.result)).toEqual({ city: "Oslo" });
    expect(model.requests).toHaveLength(1);
  });

  it("one the schema refuses is an invalid answer: the model is told what was wrong, then answers well", async () => {
    const model = scriptedModel([
      { toolCalls: [call("t1", "finish")] },
      finalOutput("f1", { city: "Bergen" }),
    ]);
    const agent = createBareAgent({
      model,
      tools: [ender({ endTurn: true, structuredResult: { city: 42 } })],
      output: City,
    });
    const result = await agent.run("Which city?");
    expect(result.subtype).toBe("success");
    expect(result.structuredResult).toEqual({ city: "Bergen" });
    const told = model.requests[1]!.messages.at(-1)!;
    expect(told.role).toBe("user");
    expect(textOf(told)).toMatch(
      /The call to finish ended your turn with an answer the output schema refuses/,
    );
    expect(textOf(told)).toMatch(/city/);
    expect(textOf(told)).toMatch(/calling the final_output tool/);
    expectValidTranscript(result.messages);
  });

  it("past outputRetries: error_during_execution with OutputValidationError, no structuredResult", async () => {
    const model = scriptedModel([{ toolCalls: [call("t1", "finish")] }]);
    const agent = createBareAgent({
      model,
      tools: [ender({ endTurn: true, structuredResult: { city: 42 } })],
      output: City,
      outputRetries: 0,
    });
    const result = await agent.run("Which city?");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.isError).toBe(true);
    expect(result.error?.name).toBe("OutputValidationError");
    expect(result.error?.message).toMatch(/city/);
    expect(result).not.toHaveProperty("structuredResult");
    expect(result.result).toBe("");
  });

  it("endTurn without a structuredResult is an invalid answer too", async () => {
    const model = scriptedModel([
      { toolCalls: [call("t1", "finish")] },
      { toolCalls: [call("t2", "finish")] },
    ]);
    const agent = createBareAgent({
      model,
      tools: [ender({ endTurn: true })],
      output: City,
      outputRetries: 1,
    });
    const result = await agent.run("Which city?");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("OutputValidationError");
    expect(result.error?.message).toMatch(/after 2 tries/);
    expect(textOf(model.requests[1]!.messages.at(-1))).toMatch(
      /The call to finish ended your turn without a final answer for the output schema/,
    );
  });

  it("Zod transforms apply to a tool's structuredResult as to final_output's", async () => {
    const Upper = z.object({ city: z.string().transform((city) => city.toUpperCase()) });
    const model = scriptedModel([{ toolCalls: [call("t1", "finish")] }]);
    const result = await createBareAgent({
      model,
      tools: [ender({ endTurn: true, structuredResult: { city: "oslo" } })],
      output: Upper,
    }).run("Which city?");
    expect(result.structuredResult).toEqual({ city: "OSLO" });
    expect(result.result).toBe('{"city":"OSLO"}');
  });
});

describe("terminate and stop under output", () => {
  it("a batch of terminate results without a structuredResult is an invalid answer; then final_output", async () => {
    const model = scriptedModel([
      { toolCalls: [call("t1", "finish"), call("t2", "finish")] },
      finalOutput("f1", { city: "Tromsø" }),
    ]);
    const result = await createBareAgent({
      model,
      tools: [ender({ terminate: true })],
      output: City,
    }).run("Which city?");
    expect(result.subtype).toBe("success");
    expect(result.structuredResult).toEqual({ city: "Tromsø" });
    expect(textOf(model.requests[1]!.messages.at(-1))).toMatch(/without a final answer/);
  });

  it("past outputRetries, a batch of terminate results fails the run", async () => {
    const model = scriptedModel([{ toolCalls: [call("t1", "finish"), call("t2", "finish")] }]);
    const result = await createBareAgent({
      model,
      tools: [ender({ terminate: true })],
      output: City,
      outputRetries: 0,
    }).run("Which city?");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("OutputValidationError");
    expect(result).not.toHaveProperty("structuredResult");
  });

  it("a terminate result whose structuredResult passes the schema is the answer", async () => {
    const model = scriptedModel([{ toolCalls: [call("t1", "finish"), call("t2", "other")] }]);
    const result = await createBareAgent({
      model,
      tools: [
        ender({ terminate: true, structuredResult: { city: "Bodø", population: 52_000 } }),
        ender({ terminate: true }, "other"),
      ],
      output: City,
    }).run("Which city?");
    expect(result.subtype).toBe("success");
    expect(result.structuredResult).toEqual({ city: "Bodø", population: 52_000 });
  });

  it("an afterToolCall stop without a structuredResult does not end the run success", async () => {
    const model = scriptedModel([{ toolCalls: [call("t1", "finish")] }]);
    const result = await createBareAgent({
      model,
      tools: [ender({})],
      output: City,
      outputRetries: 0,
      hooks: { afterToolCall: () => ({ stop: true }) },
    }).run("Which city?");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("OutputValidationError");
  });
});

describe("the retry message is in the session's log", () => {
  it("the stored transcript is the run's: every message the model saw, in order", async () => {
    const store = memoryStore();
    const model = scriptedModel([
      { text: "Oslo, I think." },
      { toolCalls: [call("t1", "finish")] },
      finalOutput("f1", { city: "Oslo" }),
    ]);
    const result = await createBareAgent({
      model,
      tools: [ender({ endTurn: true, structuredResult: { town: "Oslo" } })],
      output: City,
      sessionStore: store,
    }).run("Which city?", { sessionId: "s" });
    expect(result.subtype).toBe("success");
    const loaded = await loadSession(store, "s");
    expect(loaded!.messages).toEqual(result.messages);
    expect(loaded!.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "user",
      "assistant",
      "user",
    ]);
    // The next run of the session sends the same history.
    const next = scriptedModel([finalOutput("f2", { city: "Oslo" })]);
    await createBareAgent({ model: next, output: City, sessionStore: store }).run("Again?", {
      sessionId: "s",
    });
    expect(next.requests[0]!.messages.slice(0, -1)).toEqual(result.messages);
  });

  it("a run recovered after a crash that followed a text reply checks that reply as an answer", async () => {
    const inner = memoryStore();
    const failing = { on: true };
    // The process dies as the retry message is written: the log ends with the reply.
    const store: SessionStore = {
      append: async (sessionId, seq, entries) => {
        if (failing.on && entries.some((entry) => entry.includes('"type":"user_message"')))
          throw new Error("the process died (a simulated crash)");
        return inner.append(sessionId, seq, entries);
      },
      read: (sessionId, options) => inner.read(sessionId, options),
      list: () => inner.list(),
      delete: (sessionId) => inner.delete(sessionId),
      close: () => inner.close(),
    };
    const first = scriptedModel([{ text: "Oslo, I think." }]);
    const crashed = await createBareAgent({ model: first, output: City, sessionStore: store }).run(
      "Which city?",
      { sessionId: "s" },
    );
    expect(crashed.subtype).toBe("error_during_execution");
    expect((await loadSession(inner, "s"))?.status).toBe("interrupted");

    failing.on = false;
    const after = scriptedModel([finalOutput("f1", { city: "Oslo" })]);
    const recovered = await createBareAgent({
      model: after,
      output: City,
      sessionStore: store,
    }).resume({ sessionId: "s" });
    expect(recovered.subtype).toBe("success");
    expect(recovered.structuredResult).toEqual({ city: "Oslo" });
    expect(after.requests).toHaveLength(1);
    expect(textOf(after.requests[0]!.messages.at(-1))).toMatch(/no call to final_output/);
  });
});

/**
 * Typed output (design/interactive.md, "Typed output"): with `output`, the run ends with
 * `structuredResult`, the validated answer. Without native structured output (scriptedModel,
 * `anthropic()`), the answer is a call to the `final_output` tool; natively (`openai()`, or
 * `anthropic({ structuredOutputs: true })`) it is the reply's text. An invalid answer gets
 * another turn with the errors (naming the field), up to `outputRetries`; then the run fails
 * with `OutputValidationError`.
 */
import { anthropic, ConfigurationError, createBareAgent, defineTool, openai, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { resultFor, resultText } from "../support/results.ts";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { collect, ofType, textOf, workTool } from "./helpers.ts";

afterEach(closeMockServers);

const City = z.object({ city: z.string(), population: z.number().int().optional() });
const FAST = { maxRetryDelayMs: 2_000, timeoutMs: 5_000, idleTimeoutMs: 5_000 };

const answer = (id: string, input: unknown) => ({
  toolCalls: [{ id, name: "final_output", input }],
});

describe("the final_output tool (no native structured output)", () => {
  it("is offered with the output schema; a valid call ends the run with structuredResult and its JSON", async () => {
    const model = scriptedModel([answer("f1", { city: "Paris", population: 2_100_000 })]);
    const agent = createBareAgent({ model, output: City });
    const { events, result } = await collect(agent.stream("Which city?"));
    const offered = model.requests[0]!.tools.find((spec) => spec.name === "final_output")!;
    expect(offered.input_schema).toMatchObject({
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    });
    expect(model.requests[0]!).not.toHaveProperty("output");
    expect(result.subtype).toBe("success");
    expect(result.structuredResult).toEqual({ city: "Paris", population: 2_100_000 });
    expect(JSON.parse(result.result)).toEqual({ city: "Paris", population: 2_100_000 });
    expect(resultText(resultFor(result.messages, "f1"))).toBe("Output accepted.");
    expect(ofType(events, "result")[0]!.structuredResult).toEqual(result.structuredResult);
  });

  it("a model that first answers badly: the errors name the field, as the call's error result; then it answers well", async () => {
    const model = scriptedModel([answer("f1", { city: 42 }), answer("f2", { city: "Lyon" })]);
    const result = await createBareAgent({ model, output: City }).run("Which city?");
    expect(result.subtype).toBe("success");
    expect(result.structuredResult).toEqual({ city: "Lyon" });
    const refused = resultFor(model.requests[1]!.messages, "f1");
    expect(refused.is_error).toBe(true);
    expect(resultText(refused)).toMatch(/city/);
    expect(model.requests[1]!.messages.at(-1)!.content).toHaveLength(1);
  });

  it("each error names its field path, nested ones included", async () => {
    const Address = z.object({ address: z.object({ city: z.string(), zip: z.string() }) });
    const model = scriptedModel([
      answer("f1", { address: { city: 7, zip: "75001" } }),
      answer("f2", { address: { city: "Paris", zip: "75001" } }),
    ]);
    const result = await createBareAgent({ model, output: Address }).run("Where?");
    expect(result.structuredResult).toEqual({ address: { city: "Paris", zip: "75001" } });
    const errors = resultText(resultFor(model.requests[1]!.messages, "f1"));
    expect(errors).toMatch(/address\.city/);
    expect(errors).not.toMatch(/zip/);
  });

  it("invalid answers so far travel in a paused state and count after resume", async () => {
    const work = workTool();
    const external = defineTool({
      id: "ask_app",
      parameters: { type: "object", properties: {} },
      execute: false,
    });
    const model = scriptedModel([
      answer("f1", { city: 1 }),
      { toolCalls: [{ id: "e1", name: "ask_app", input: {} }] },
    ]);
    const options = { tools: [work.tool, external], output: City, outputRetries: 1 };
    const paused = await createBareAgent({ model, ...options }).run("go");
    expect(paused.subtype).toBe("paused");
    expect(paused.state!.outputAttempts).toBe(1);
    const next = scriptedModel([answer("f3", { city: 3 })]);
    const resumed = await createBareAgent({ model: next, ...options }).resume(
      JSON.parse(JSON.stringify(paused.state)),
      { toolOutputs: { e1: "ok" } },
    );
    expect(next.requests).toHaveLength(1);
    expect(resumed.subtype).toBe("error_during_execution");
    expect(resumed.error?.name).toBe("OutputValidationError");
  });

  it("a reply with no tool call is an invalid answer: a user message asks for final_output", async () => {
    const model = scriptedModel([{ text: "Paris, I think." }, answer("f1", { city: "Paris" })]);
    const result = await createBareAgent({ model, output: City }).run("Which city?");
    expect(result.structuredResult).toEqual({ city: "Paris" });
    const told = model.requests[1]!.messages.at(-1)!;
    expect(told.role).toBe("user");
    expect(textOf(told)).toContain("final_output");
  });

  it("the batch's other calls run as usual beside the answer", async () => {
    const work = workTool();
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "w1", name: "work", input: { n: 1 } },
          { id: "f1", name: "final_output", input: { city: "Oslo" } },
        ],
      },
    ]);
    const result = await createBareAgent({ model, tools: [work.tool], output: City }).run("go");
    expect(work.log).toEqual(["start:1", "end:1"]);
    expect(result.structuredResult).toEqual({ city: "Oslo" });
    expect(model.requests).toHaveLength(1);
  });

  it("Zod transforms are applied to structuredResult", async () => {
    const Shout = z.object({ word: z.string().transform((word) => word.toUpperCase()) });
    const model = scriptedModel([answer("f1", { word: "hello" })]);
    const result = await createBareAgent({ model, output: Shout }).run("go");
    expect(result.structuredResult).toEqual({ word: "HELLO" });
  });

  it("a JSON Schema output works too", async () => {
    const model = scriptedModel([answer("f1", { n: 3 }), answer("f2", { n: "3" })]);
    const result = await createBareAgent({
      model,
      output: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      outputRetries: 0,
    }).run("go");
    expect(result.structuredResult).toEqual({ n: 3 });
  });

  it("outputRetries exhausted: error_during_execution, OutputValidationError with the last errors", async () => {
    const model = scriptedModel([
      answer("f1", { town: "Paris" }),
      { text: "I refuse to use tools." },
      answer("f3", { city: ["not", "a", "string"] }),
      answer("f4", { city: "never asked" }),
    ]);
    const result = await createBareAgent({ model, output: City, outputRetries: 2 }).run("go");
    expect(model.requests).toHaveLength(3);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.isError).toBe(true);
    expect(result.error?.name).toBe("OutputValidationError");
    expect(result.error?.message).toMatch(/city/);
    expect(result.structuredResult).toBeUndefined();
  });

  it("outputRetries: 0 fails on the first invalid answer", async () => {
    const model = scriptedModel([{ text: "no" }, answer("f2", { city: "x" })]);
    const result = await createBareAgent({ model, output: City, outputRetries: 0 }).run("go");
    expect(model.requests).toHaveLength(1);
    expect(result.error?.name).toBe("OutputValidationError");
  });

  it("delivery point 3 comes first: a queued follow-up makes the model answer again", async () => {
    const model = scriptedModel([answer("f1", { city: "Rome" }), answer("f2", { city: "Milan" })]);
    const agent = createBareAgent({ model, output: City });
    const run = agent.stream("Which city?");
    run.followUp("Actually, the second largest.");
    const { result } = await collect(run);
    expect(model.requests).toHaveLength(2);
    expect(result.structuredResult).toEqual({ city: "Milan" });
  });
});

describe("native structured output over the wire", () => {
  it("openai (structuredOutputs default true): response_format, no final_output tool; a bad answer, then a good one", async () => {
    const server = await openMockServer({
      script: [{ text: '{"city": 5}' }, { text: '{"city":"Paris","population":2100000}' }],
    });
    const model = openai({ baseURL: `${server.url}/v1`, apiKey: "test", ...FAST });
    expect(model.structuredOutputs).toBe(true);
    const result = await createBareAgent({ model, output: City }).run("Which city?");
    expect(result.subtype).toBe("success");
    expect(result.structuredResult).toEqual({ city: "Paris", population: 2_100_000 });
    const [first, second] = server.requests.map((request) => request.body);
    expect(first.response_format).toMatchObject({
      type: "json_schema",
      json_schema: { name: "final_output", strict: false },
    });
    expect(first.response_format.json_schema.schema).toMatchObject({
      type: "object",
      properties: { city: { type: "string" } },
    });
    expect(JSON.stringify(first.tools ?? [])).not.toContain("final_output");
    // The errors went back as a user message naming the field.
    const told = second.messages.at(-1);
    expect(told.role).toBe("user");
    expect(JSON.stringify(told.content)).toContain("city");
  });

  it("openai: text that is not JSON is an invalid answer too; past outputRetries the run fails", async () => {
    const server = await openMockServer({ script: [{ text: "Paris." }, { text: "Still Paris." }] });
    const model = openai({ baseURL: `${server.url}/v1`, apiKey: "test", ...FAST });
    const result = await createBareAgent({ model, output: City, outputRetries: 1 }).run("go");
    expect(server.requests).toHaveLength(2);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("OutputValidationError");
    expect(result.error?.message).toMatch(/JSON/);
  });

  it("anthropic({ structuredOutputs: true }): native; a bad answer, then a good one", async () => {
    const server = await openMockServer({
      script: [{ text: '{"population": 3}' }, { text: '{"city":"Berlin"}' }],
    });
    const model = anthropic({
      baseURL: server.url,
      apiKey: "test",
      structuredOutputs: true,
      ...FAST,
    });
    const result = await createBareAgent({ model, output: City }).run("Which city?");
    expect(result.subtype).toBe("success");
    expect(result.structuredResult).toEqual({ city: "Berlin" });
    const bodies = server.requests.map((request) => request.body);
    expect(JSON.stringify(bodies[0].tools ?? [])).not.toContain("final_output");
    expect(JSON.stringify(bodies[1].messages.at(-1))).toContain("city");
  });

  it("anthropic() by default: the final_output tool over the wire; a bad call, then a good one", async () => {
    const server = await openMockServer({
      script: [
        { toolCalls: [{ id: "toolu_1", name: "final_output", input: { city: 1 } }] },
        { toolCalls: [{ id: "toolu_2", name: "final_output", input: { city: "Bern" } }] },
      ],
    });
    const model = anthropic({ baseURL: server.url, apiKey: "test", ...FAST });
    const result = await createBareAgent({ model, output: City }).run("Which city?");
    expect(result.structuredResult).toEqual({ city: "Bern" });
    const bodies = server.requests.map((request) => request.body);
    expect(bodies[0].tools.map((spec: { name: string }) => spec.name)).toEqual(["final_output"]);
    expect(bodies[0]).not.toHaveProperty("output_config");
  });
});

describe("output is checked at assembly", () => {
  const model = scriptedModel([]);
  it.each([
    ["a string", "city"],
    ["a number", 5],
    ["a JSON Schema that is not an object", { type: "string" }],
    ["a Zod string", z.string()],
  ])("%s is refused", (_, output) => {
    expect(() => createBareAgent({ model, output: output as never })).toThrow(ConfigurationError);
    expect(() => createBareAgent({ model, output: output as never })).toThrow(
      /^AgentOptions: output must /,
    );
  });

  it("a tool named final_output beside output is refused", () => {
    const clash = tool("final_output", "Mine", z.object({}), () => "x");
    expect(() => createBareAgent({ model, tools: [clash], output: City })).toThrow(
      ConfigurationError,
    );
  });

  it.each([-1, 1.5, "2"])("outputRetries %j is refused", (retries) => {
    expect(() => createBareAgent({ model, output: City, outputRetries: retries as never })).toThrow(
      /^AgentOptions: outputRetries must be a non-negative integer/,
    );
  });
});

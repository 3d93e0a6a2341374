import {
  type AgentOptions,
  createBareAgent,
  defineTool,
  ResumeError,
  type RunState,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { collect } from "./helpers.ts";

async function pausedRun() {
  const counts = { local: 0 };
  const local = tool("local", "Local", z.object({}), async () => {
    counts.local++;
    return "local result";
  });
  const external = defineTool({
    id: "external",
    parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
    execute: false,
  });
  const other = defineTool({ id: "other", execute: false });
  const model = scriptedModel([
    {
      toolCalls: [
        { id: "loc", name: "local", input: {} },
        { id: "ext", name: "external", input: { n: 1 } },
      ],
    },
    { text: "done" },
    { text: "done again" },
  ]);
  const options: AgentOptions = { model, tools: [local, external, other] };
  const result = await createBareAgent(options).run("go");
  expect(result.subtype).toBe("paused");
  const fresh = () => JSON.parse(JSON.stringify(result.state)) as RunState;
  return { options, model, counts, fresh };
}

async function expectRefused(
  run: Promise<unknown>,
  setup: Awaited<ReturnType<typeof pausedRun>>,
): Promise<ResumeError> {
  const error = await run.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ResumeError);
  expect((error as Error).name).toBe("ResumeError");
  expect(setup.model.requests).toHaveLength(1);
  expect(setup.counts.local).toBe(1);
  return error as ResumeError;
}

describe("resume refuses, before anything runs", () => {
  it("toolOutputs naming a call that is not pending", async () => {
    const setup = await pausedRun();
    const error = await expectRefused(
      createBareAgent(setup.options).resume(setup.fresh(), {
        toolOutputs: { ext: 1, loc: "again" },
      }),
      setup,
    );
    expect(error.message).toContain("loc");
  });

  it("toolOutputs naming an id that does not exist", async () => {
    const setup = await pausedRun();
    await expectRefused(
      createBareAgent(setup.options).resume(setup.fresh(), { toolOutputs: { nope: 1 } }),
      setup,
    );
  });

  it("a state whose paused call id was changed", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    state.batch!.calls[1]!.id = "forged";
    await expectRefused(
      createBareAgent(setup.options).resume(state, { toolOutputs: { forged: 1 } }),
      setup,
    );
  });

  it("a state whose paused call names another tool", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    state.batch!.calls[1]!.name = "other";
    await expectRefused(
      createBareAgent(setup.options).resume(state, { toolOutputs: { ext: 1 } }),
      setup,
    );
  });

  it("a state whose transcript tool_use id was changed", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    const assistant = state.messages.at(-1)!;
    const block = (assistant.content as { type: string; id?: string }[])[1]!;
    block.id = "forged";
    await expectRefused(
      createBareAgent(setup.options).resume(state, { toolOutputs: { ext: 1 } }),
      setup,
    );
  });

  it("a state whose finished call was renamed", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    state.batch!.calls[0]!.name = "other";
    await expectRefused(
      createBareAgent(setup.options).resume(state, { toolOutputs: { ext: 1 } }),
      setup,
    );
  });

  it("a state whose pending input no longer passes the schema", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    state.batch!.calls[1]!.input = { n: "not a number" };
    await expectRefused(
      createBareAgent(setup.options).resume(state, { toolOutputs: { ext: 1 } }),
      setup,
    );
  });

  it("something that is not a state at all", async () => {
    const setup = await pausedRun();
    await expectRefused(createBareAgent(setup.options).resume("not json"), setup);
    await expectRefused(
      createBareAgent(setup.options).resume({ version: 2 } as unknown as RunState),
      setup,
    );
  });

  it("through resumeStream too, before any event", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    state.batch!.calls[1]!.id = "forged";
    const seen: string[] = [];
    const consume = async () => {
      for await (const event of createBareAgent(setup.options).resumeStream(state))
        seen.push(event.type);
    };
    await expectRefused(consume(), setup);
    expect(seen).toEqual([]);
  });
});

describe("resume never runs a finished call again (B12)", () => {
  it("resuming the same state twice runs the batch's finished call once in all", async () => {
    const setup = await pausedRun();
    const first = await createBareAgent(setup.options).resume(setup.fresh(), {
      toolOutputs: { ext: 1 },
    });
    const second = await createBareAgent(setup.options).resume(setup.fresh(), {
      toolOutputs: { ext: 2 },
    });
    expect([first.subtype, second.subtype]).toEqual(["success", "success"]);
    expect(setup.counts.local).toBe(1);
  });

  it("a resumed stream emits no tool_start or tool_end for calls that finished before the pause", async () => {
    const setup = await pausedRun();
    const { events } = await collect(
      createBareAgent(setup.options).resumeStream(setup.fresh(), { toolOutputs: { ext: 1 } }),
    );
    expect(
      events.flatMap((event) =>
        event.type === "tool_start" || event.type === "tool_end"
          ? [`${event.type}:${event.callId}`]
          : [],
      ),
    ).toEqual(["tool_end:ext"]);
  });
});

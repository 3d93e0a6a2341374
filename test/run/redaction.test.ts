import { homedir } from "node:os";
import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

describe("error text sent to the model", () => {
  it("replaces the home directory with ~, while details keep the raw error for the app", async () => {
    const failing = tool("open_secret", "Opens a file", z.object({}), async () => {
      throw new Error(`ENOENT: no such file or directory, open '${homedir()}/project/.env'`);
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "a", name: "open_secret", input: {} }] },
      { text: "ok" },
    ]);
    const result = await createBareAgent({ model, tools: [failing] }).run("go");

    const sent = model.requests[1]!.messages[2]!.content;
    expect(sent).toEqual([
      {
        type: "tool_result",
        tool_use_id: "a",
        content: `Tool "open_secret" failed: ENOENT: no such file or directory, open '~/project/.env'`,
        is_error: true,
      },
    ]);
    expect(result.steps[0]!.toolCalls[0]!.result.details).toEqual({
      reason: "threw",
      error: {
        name: "Error",
        message: `ENOENT: no such file or directory, open '${homedir()}/project/.env'`,
      },
    });
  });

  it("drops stack frames and writes the working directory as . in errors of handlers and hooks", async () => {
    const failing = tool("boom", "Fails", z.object({}), async () => {
      const error = new Error(`cannot open ${process.cwd()}/data/x.json`);
      // A message that embeds its own stack, as some libraries do.
      error.message += `\n    at readData (${process.cwd()}/src/data.ts:10:3)\n    at main (${process.cwd()}/src/main.ts:2:1)`;
      throw error;
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "boom", input: {} },
          { id: "b", name: "boom", input: {} },
        ],
      },
      { text: "ok" },
    ]);
    const agent = createBareAgent({
      model,
      tools: [failing],
      toolBatchPolicy: { validate: () => ({ allowed: true }) },
      hooks: {
        beforeToolCall: ({ callId }) => {
          if (callId === "b")
            throw new Error(`policy file ${homedir()}/.config/rules.json is missing`);
        },
      },
    });
    await agent.run("go");
    expect(model.requests[1]!.messages[2]!.content).toEqual([
      {
        type: "tool_result",
        tool_use_id: "a",
        content: `Tool "boom" failed: cannot open ./data/x.json`,
        is_error: true,
      },
      {
        type: "tool_result",
        tool_use_id: "b",
        content: `The beforeToolCall hook failed for tool "boom": policy file ~/.config/rules.json is missing`,
        is_error: true,
      },
    ]);
  });
});

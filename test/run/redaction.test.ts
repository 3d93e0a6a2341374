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
});

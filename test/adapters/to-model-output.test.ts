/**
 * ai's `toModelOutput`: the model is sent what the tool's toModelOutput makes of its output (as ai
 * sends it), the output itself stays on `tool_end` as `details`; a part skein cannot carry is an
 * error result that says so.
 */
import { tool } from "ai";
import { type AgentEvent, ConfigurationError, createBareAgent } from "skein";
import { fromAiSdkTools } from "skein/adapters";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

/** Runs one call of `shot` and returns its tool_result block and its tool_end event. */
async function runShot(shot: Parameters<typeof fromAiSdkTools>[0][string]) {
  const events: AgentEvent[] = [];
  const agent = createBareAgent({
    model: scriptedModel([
      { toolCalls: [{ id: "call_1", name: "shot", input: { page: "home" } }] },
      { text: "done" },
    ]),
    tools: fromAiSdkTools({ shot }),
  });
  for await (const event of agent.stream("go")) events.push(event);
  const end = events.find((event) => event.type === "tool_end") as Extract<
    AgentEvent,
    { type: "tool_end" }
  >;
  const result = events.findLast((event) => event.type === "result") as Extract<
    AgentEvent,
    { type: "result" }
  >;
  const block = (result.messages.at(-2)!.content as unknown[])[0];
  return { block, end };
}

const input = z.object({ page: z.string() });

describe("fromAiSdkTools(): toModelOutput", () => {
  it("content parts become text and image blocks; the output is the event's details", async () => {
    const seen: unknown[] = [];
    const { block, end } = await runShot(
      tool({
        inputSchema: input,
        execute: async ({ page }) => ({ page, png: "iVBORw0KGgo=" }),
        toModelOutput: (options) => {
          seen.push(options);
          const output = options.output as { page: string; png: string };
          return {
            type: "content",
            value: [
              { type: "text", text: `screenshot of ${output.page}` },
              { type: "image-data", data: output.png, mediaType: "image/png" },
              { type: "image-url", url: "https://example.com/a.png" },
              { type: "media", data: "R0lGOD", mediaType: "image/gif" },
            ],
          };
        },
      }),
    );
    expect(seen).toEqual([
      {
        toolCallId: "call_1",
        input: { page: "home" },
        output: { page: "home", png: "iVBORw0KGgo=" },
      },
    ]);
    expect(block).toEqual({
      type: "tool_result",
      tool_use_id: "call_1",
      is_error: false,
      content: [
        { type: "text", text: "screenshot of home" },
        {
          type: "image",
          source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
        },
        { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
        { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lGOD" } },
      ],
    });
    expect(end.result.details).toEqual({ page: "home", png: "iVBORw0KGgo=" });
  });

  it.each([
    [{ type: "text", value: "plain" }, "plain", false],
    [{ type: "json", value: { a: [1, 2] } }, '{"a":[1,2]}', false],
    [{ type: "error-text", value: "no such page" }, "no such page", true],
    [{ type: "error-json", value: { code: 404 } }, '{"code":404}', true],
    [{ type: "execution-denied", reason: "not today" }, "not today", true],
    [{ type: "execution-denied" }, "The tool's execution was denied.", true],
  ])("%j is sent as %j (is_error %s)", async (output, content, isError) => {
    const { block } = await runShot(
      tool({
        inputSchema: input,
        execute: async () => "raw",
        toModelOutput: async () => output as never,
      }),
    );
    expect(block).toEqual({
      type: "tool_result",
      tool_use_id: "call_1",
      content,
      is_error: isError,
    });
  });

  it("applies to the last yield of a tool with preliminary results, which stay progress", async () => {
    const events: AgentEvent[] = [];
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "call_1", name: "count", input: {} }] },
        { text: "done" },
      ]),
      tools: fromAiSdkTools({
        count: tool({
          inputSchema: z.object({}),
          async *execute() {
            yield { step: 1 };
            yield { step: 2 };
          },
          toModelOutput: ({ output }) => ({
            type: "text",
            value: `finished at ${(output as { step: number }).step}`,
          }),
        }),
      }),
    });
    for await (const event of agent.stream("go")) events.push(event);
    expect(
      events.filter((event) => event.type === "tool_update").map((event) => event.update),
    ).toEqual([{ step: 1 }, { step: 2 }]);
    const result = events.findLast((event) => event.type === "result") as Extract<
      AgentEvent,
      { type: "result" }
    >;
    expect((result.messages.at(-2)!.content as { content: unknown }[])[0]!.content).toBe(
      "finished at 2",
    );
  });

  it.each([
    [
      {
        type: "content",
        value: [{ type: "file-data", data: "JVBE", mediaType: "application/pdf" }],
      },
      /content part 0 is of type "file-data" \(application\/pdf\), which skein's tool results cannot carry/,
    ],
    [{ type: "text", value: 42 }, /its text value is 42, not a string/],
    [{ type: "audio" }, /an output of type "audio"/],
    ["just text", /it returned "just text"/],
  ])("an output skein cannot send (%j) is an error result that says why", async (output, why) => {
    const { block } = await runShot(
      tool({
        inputSchema: input,
        execute: async () => "raw",
        toModelOutput: () => output as never,
      }),
    );
    expect(block).toMatchObject({ is_error: true });
    expect((block as { content: string }).content).toMatch(why);
  });

  it("a toModelOutput that throws is an error result; one that is not a function is refused", async () => {
    const { block } = await runShot(
      tool({
        inputSchema: input,
        execute: async () => "raw",
        toModelOutput: () => {
          throw new Error("renderer crashed");
        },
      }),
    );
    expect(block).toMatchObject({ is_error: true });
    expect((block as { content: string }).content).toContain("renderer crashed");
    expect(() =>
      fromAiSdkTools({
        odd: { inputSchema: input, execute: async () => "x", toModelOutput: "text" },
      } as never),
    ).toThrow(ConfigurationError);
  });
});

import { type AgentEvent, type ToolHandlerReturn, tool } from "skein";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";
import { runCall, textOfBlock } from "./harness.ts";

const empty = z.object({});

/** A tool whose handler returns `value` (typed loosely, to test what JavaScript callers can do). */
function returning(value: unknown) {
  return tool("produce", "Produces a value", empty, () => value as ToolHandlerReturn);
}

const pixel = {
  type: "image" as const,
  source: { type: "base64" as const, media_type: "image/png", data: "iVBORw0KGgo=" },
};

describe("what a tool() handler may return", () => {
  it("a string becomes the tool_result content as is", async () => {
    const run = await runCall(returning("plain text"), {});
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "plain text", is_error: false },
    ]);
    expect(run.toolEnds[0]?.result).toEqual({ content: "plain text" });
    expect(run.result.steps[0]?.toolCalls[0]?.result).toEqual({ content: "plain text" });
  });

  it("an array of text and image blocks is sent as those blocks", async () => {
    const blocks = [{ type: "text" as const, text: "a chart:" }, pixel];
    const run = await runCall(returning(blocks), {});
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: blocks, is_error: false },
    ]);
    expect(run.model.requests[1]?.messages[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: blocks, is_error: false },
    ]);
  });

  it("a ToolResult object gives content and isError; details reach tool_end but never the model", async () => {
    const details = { rows: 3, secretMarker: "only-for-the-ui" };
    const run = await runCall(returning({ content: "3 rows", isError: true, details }), {});
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "3 rows", is_error: true },
    ]);
    expect(run.toolEnds).toHaveLength(1);
    expect(run.toolEnds[0]).toMatchObject({
      type: "tool_end",
      callId: "call_1",
      name: "produce",
      isError: true,
      details,
      result: { content: "3 rows", isError: true, details },
    });
    expect(JSON.stringify(run.model.requests)).not.toContain("only-for-the-ui");
    expect(JSON.stringify(run.result.messages)).not.toContain("only-for-the-ui");
  });

  it("a ToolResult whose content is blocks keeps them", async () => {
    const run = await runCall(returning({ content: [pixel] }), {});
    expect(run.toolResults[0]?.content).toEqual([pixel]);
    expect(run.toolResults[0]?.is_error).toBe(false);
  });
});

describe("maxResultChars on a tool", () => {
  it("caps what the model gets, head and tail kept; tool_end keeps the full result", async () => {
    const long = `HEAD${"x".repeat(1_000)}TAIL`;
    const verbose = tool("verbose", "Talks a lot", empty, () => long, { maxResultChars: 100 });
    const run = await runCall(verbose, {});
    const sent = textOfBlock(run.toolResults[0]);
    expect(sent.startsWith("HEAD")).toBe(true);
    expect(sent.endsWith("TAIL")).toBe(true);
    expect(sent).toMatch(/characters omitted of 1008/);
    expect(sent.length).toBeLessThan(400);
    expect(run.toolEnds[0]?.result.content).toBe(long);
  });
});

describe("an async generator handler", () => {
  it("streams each yield as tool_update while it runs, records them, and returns the result", async () => {
    const sawFirstUpdate = deferred();
    let releasedBeforeReturn = false;
    const index = tool(
      "index_repository",
      "Indexes",
      z.object({ path: z.string() }),
      async function* ({ path }) {
        yield { phase: "scan", path };
        await sawFirstUpdate.promise;
        releasedBeforeReturn = true;
        yield { phase: "embed" };
        return { content: "indexed 248 files", details: { indexed: 248 } };
      },
    );
    const run = await runCall(
      index,
      { path: "src" },
      {
        onEvent: (event: AgentEvent) => {
          if (event.type === "tool_update") sawFirstUpdate.resolve();
        },
      },
    );
    expect(releasedBeforeReturn).toBe(true);
    expect(run.updates).toEqual([
      {
        type: "tool_update",
        callId: "call_1",
        name: "index_repository",
        update: { phase: "scan", path: "src" },
      },
      {
        type: "tool_update",
        callId: "call_1",
        name: "index_repository",
        update: { phase: "embed" },
      },
    ]);
    expect(run.result.steps[0]?.toolCalls[0]?.preliminaryResults).toEqual([
      { phase: "scan", path: "src" },
      { phase: "embed" },
    ]);
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "indexed 248 files", is_error: false },
    ]);
    expect(run.toolEnds[0]?.details).toEqual({ indexed: 248 });
    const types = run.events.map((event) => event.type).filter((type) => type.startsWith("tool_"));
    expect(types).toEqual(["tool_start", "tool_update", "tool_update", "tool_end"]);
  });

  it("ctx.update counts as a preliminary result too", async () => {
    const reporter = tool("report", "Reports", empty, (_input, ctx) => {
      ctx.update("half way");
      return "done";
    });
    const run = await runCall(reporter, {});
    expect(run.updates.map((event) => event.update)).toEqual(["half way"]);
    expect(run.result.steps[0]?.toolCalls[0]?.preliminaryResults).toEqual(["half way"]);
  });

  it("a generator that returns nothing gets the same error as a handler that returns undefined", async () => {
    const silent = tool("silent", "Says nothing", empty, async function* () {
      yield 1;
    } as never);
    const run = await runCall(silent, {});
    expect(run.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toMatch(/returned undefined; expected a string/);
    expect(run.result.steps[0]?.toolCalls[0]?.preliminaryResults).toEqual([1]);
  });
});

describe("a return value skein cannot send becomes an is_error result that says what was expected", () => {
  const expected = /expected a string, an array of content blocks, or an object with "content"/;

  const circular: Record<string, unknown> = { name: "loop" };
  circular.self = circular;

  it.each([
    ["a number", 42, /returned a number/],
    ["an object without content", { text: "hi" }, /returned an object without "content"/],
    ["undefined", undefined, /returned undefined/],
    ["null", null, /returned null/],
    ["a circular object without content", circular, /returned an object without "content"/],
  ])("%s", async (_label, value, kind) => {
    const run = await runCall(returning(value), {});
    expect(run.toolResults[0]?.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text).toMatch(/^Tool "produce" returned a result skein cannot use/);
    expect(text).toMatch(kind);
    expect(text).toMatch(expected);
    expect(run.toolEnds[0]?.isError).toBe(true);
    expect(run.result.subtype).toBe("success");
  });

  it("content that is neither a string nor blocks", async () => {
    const run = await runCall(returning({ content: 7 }), {});
    expect(run.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toMatch(
      /"content" is a number; expected a string or an array of content blocks/,
    );
  });

  it("a block of an unsupported type", async () => {
    const run = await runCall(returning([{ type: "tool_use", id: "x", name: "y", input: {} }]), {});
    expect(run.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toMatch(/"text" and "image" blocks/);
  });

  it("a text block without text, an image block without source", async () => {
    const noText = await runCall(returning([{ type: "text", value: "hi" }]), {});
    expect(noText.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(noText.toolResults[0])).toMatch(
      /content block 0 is "text" without a string "text"/,
    );
    const noSource = await runCall(
      returning({ content: [{ type: "text", text: "a" }, { type: "image" }] }),
      {},
    );
    expect(noSource.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(noSource.toolResults[0])).toMatch(
      /content block 1 is "image" without a usable "source"/,
    );
  });

  it("a circular or BigInt extra field on a block: the block is copied to its plain shape", async () => {
    const block: Record<string, unknown> = { type: "text", text: "hi" };
    block.self = block;
    const circular = await runCall(returning({ content: [block] }), {});
    expect(circular.toolResults).toEqual([
      {
        type: "tool_result",
        tool_use_id: "call_1",
        content: [{ type: "text", text: "hi" }],
        is_error: false,
      },
    ]);
    const big = await runCall(returning([{ type: "text", text: "hi", size: 10n }]), {});
    expect(big.toolResults).toEqual([
      {
        type: "tool_result",
        tool_use_id: "call_1",
        content: [{ type: "text", text: "hi" }],
        is_error: false,
      },
    ]);
  });

  it("an image block whose source is null or lacks its data", async () => {
    for (const source of [null, { type: "base64", media_type: "image/png" }, { type: "url" }]) {
      const run = await runCall(returning([{ type: "image", source }]), {});
      expect(run.toolResults[0]?.is_error).toBe(true);
      expect(textOfBlock(run.toolResults[0])).toMatch(
        /content block 0 is "image" without a usable "source"/,
      );
    }
  });

  it("blocks are copied: a tool that changes its returned array later does not change the transcript", async () => {
    const blocks = [{ type: "text" as const, text: "original" }];
    const run = await runCall(returning(blocks), {});
    blocks[0]!.text = "changed";
    blocks.push({ type: "text", text: "added" });
    expect(run.toolResults[0]?.content).toEqual([{ type: "text", text: "original" }]);
  });

  it("a BigInt or a cycle in details does not break the run, and the model still gets the content", async () => {
    const details: Record<string, unknown> = { size: 10n };
    details.self = details;
    const run = await runCall(returning({ content: "fine", details }), {});
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "fine", is_error: false },
    ]);
    expect(run.toolEnds[0]?.details).toBe(details);
    expect(run.result.subtype).toBe("success");
  });
});

describe("a handler that throws", () => {
  it("becomes an is_error result with the message, and the run goes on", async () => {
    const broken = tool("broken", "Breaks", empty, () => {
      throw new Error("disk full");
    });
    const run = await runCall(broken, {});
    expect(run.toolResults).toEqual([
      {
        type: "tool_result",
        tool_use_id: "call_1",
        content: 'Tool "broken" failed: disk full',
        is_error: true,
      },
    ]);
    expect(run.result.subtype).toBe("success");
    expect(run.result.result).toBe("done");
  });
});

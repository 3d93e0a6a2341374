import { defineTool, tool } from "skein";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runCall, textOfBlock } from "./harness.ts";

const search = z.object({ query: z.string().min(1), limit: z.number().int().min(1).max(50) });

describe("prepareArguments", () => {
  it("runs before validation: a default it fills makes a call valid (seed 004)", async () => {
    const seen: unknown[] = [];
    const prepared: unknown[] = [];
    const searchDocs = tool(
      "search_docs",
      "Search the documentation",
      search,
      (input) => {
        seen.push(input);
        return `${input.query}/${input.limit}`;
      },
      {
        prepareArguments: (raw) => {
          prepared.push({ ...raw });
          if (!("limit" in raw)) raw.limit = 10;
          return raw;
        },
      },
    );
    const run = await runCall(searchDocs, { query: "tools" });
    expect(prepared).toEqual([{ query: "tools" }]);
    expect(seen).toEqual([{ query: "tools", limit: 10 }]);
    expect(textOfBlock(run.toolResults[0])).toBe("tools/10");
    // The transcript keeps what the model sent.
    expect(run.result.messages[1]?.content).toEqual([
      { type: "tool_use", id: "call_1", name: "search_docs", input: { query: "tools" } },
    ]);
  });

  it("gets a copy: mutating it does not change the model's input in the transcript", async () => {
    const rename = tool("rename", "Renames", z.object({ name: z.string() }), ({ name }) => name, {
      prepareArguments: (raw) => {
        raw.name = String(raw.legacyName);
        delete raw.legacyName;
        return raw;
      },
    });
    const run = await runCall(rename, { legacyName: "old" });
    expect(textOfBlock(run.toolResults[0])).toBe("old");
    expect(run.result.messages[1]?.content).toEqual([
      { type: "tool_use", id: "call_1", name: "rename", input: { legacyName: "old" } },
    ]);
  });

  it("its output is still coerced and validated", async () => {
    let calls = 0;
    const searchDocs = tool(
      "search_docs",
      "Search",
      search,
      (input) => {
        calls++;
        return String(input.limit);
      },
      { prepareArguments: (raw) => ({ ...raw, limit: raw.limit ?? "5" }) },
    );
    const coerced = await runCall(searchDocs, { query: "q" });
    expect(textOfBlock(coerced.toolResults[0])).toBe("5");

    const invalid = await runCall(searchDocs, { query: "q", limit: 500 });
    expect(invalid.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(invalid.toolResults[0])).toMatch(/^- limit: .*50.*received number 500$/m);
    expect(calls).toBe(1);
  });

  it("a throwing prepareArguments gives an error result and the handler never runs", async () => {
    let calls = 0;
    const fragile = tool(
      "fragile",
      "Fragile",
      z.object({}),
      () => {
        calls++;
        return "ran";
      },
      {
        prepareArguments: () => {
          throw new Error("cannot read the legacy format");
        },
      },
    );
    const run = await runCall(fragile, { legacy: true });
    expect(calls).toBe(0);
    expect(run.toolResults).toEqual([
      {
        type: "tool_result",
        tool_use_id: "call_1",
        content: 'Tool "fragile" could not prepare its arguments: cannot read the legacy format',
        is_error: true,
      },
    ]);
    expect(run.result.subtype).toBe("success");
  });

  it("one that returns no object gives an error result that blames prepareArguments", async () => {
    let calls = 0;
    const forgetful = tool(
      "forgetful",
      "Forgets to return",
      z.object({ limit: z.number().optional() }),
      () => {
        calls++;
        return "ran";
      },
      {
        prepareArguments: ((raw: Record<string, unknown>) => {
          raw.limit = 10;
        }) as never,
      },
    );
    const run = await runCall(forgetful, {});
    expect(calls).toBe(0);
    expect(run.toolResults[0]?.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text).toMatch(/prepareArguments/);
    expect(text).toMatch(/object/);
    expect(text).not.toMatch(/required field is missing/);
  });

  it("works the same on defineTool()", async () => {
    const seen: unknown[] = [];
    const paged = defineTool({
      id: "paged",
      parameters: {
        type: "object",
        properties: { page: { type: "integer" } },
        required: ["page"],
      },
      prepareArguments: (raw) => ({ page: 1, ...raw }),
      execute: (input: { page: number }) => {
        seen.push(input);
        return "ok";
      },
    });
    await runCall(paged, {});
    await runCall(paged, { page: "3" });
    expect(seen).toEqual([{ page: 1 }, { page: 3 }]);
  });

  it("is not called for input that is not an object", async () => {
    let prepared = 0;
    const guarded = tool("guarded", "Guarded", z.object({}), () => "ran", {
      prepareArguments: (raw) => {
        prepared++;
        return raw;
      },
    });
    const run = await runCall(guarded, "not an object");
    expect(prepared).toBe(0);
    expect(textOfBlock(run.toolResults[0])).toMatch(/the input must be a JSON object/);
  });
});

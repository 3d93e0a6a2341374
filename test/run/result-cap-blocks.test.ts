import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

describe("the result cap over many content blocks", () => {
  it("applies one budget to all text blocks, keeps head and tail, and adds one note", async () => {
    const blocks = Array.from({ length: 1000 }, (_, index) => ({
      type: "text" as const,
      text: `${index}:`.padEnd(200, "."),
    }));
    const many = tool("many", "Many blocks", z.object({}), () => blocks, { maxResultChars: 1000 });
    const model = scriptedModel([
      { toolCalls: [{ id: "a", name: "many", input: {} }] },
      { text: "ok" },
    ]);
    const result = await createBareAgent({ model, tools: [many] }).run("go");

    const sent = (
      model.requests[1]!.messages[2]!.content as { content: { type: string; text: string }[] }[]
    )[0]!.content;
    const notes = sent.filter((block) => block.text.includes("characters omitted"));
    expect(notes).toHaveLength(1);
    const kept = sent.filter((block) => !block.text.includes("characters omitted"));
    expect(kept.reduce((sum, block) => sum + block.text.length, 0)).toBe(1000);
    expect(sent[0]!.text).toBe(blocks[0]!.text);
    expect(sent.at(-1)!.text).toBe(blocks[999]!.text);
    expect(notes[0]!.text).toContain(`${200_000 - 1000} characters omitted of 200000`);
    // The app still has every block.
    expect(result.steps[0]!.toolCalls[0]!.result.content).toHaveLength(1000);
  });
});

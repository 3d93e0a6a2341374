/** skein's own agents example (examples/agents-researcher-writer.ts) runs offline and says what happened. */
import { describe, expect, it } from "vitest";
import { main } from "../examples/agents-researcher-writer.ts";

describe("examples/agents-researcher-writer.ts", () => {
  it("asks the researcher, hands the article to the writer, and the writer takes it with runNext", async () => {
    const lines: string[] = [];
    await main((line) => lines.push(line));
    expect(lines).toEqual([
      "  (inside toolu_1_1) look_up: tides: tides follow the moon, twice a day.",
      "researcher: Tides rise and fall twice a day, pulled by the moon.",
      expect.stringMatching(
        /^delegate: Handed off to "writer" \(message [0-9a-f-]{36}\)\. It runs on its own/,
      ),
      "lead: Research done; the writer has the article.",
      "lead used 19 output tokens; with the researcher: 41",
      "writer: Article: Tides rise and fall twice a day, pulled by the moon. (task from call toolu_2_1)",
      "more tasks: none",
    ]);
  });
});

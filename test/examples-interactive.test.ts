/** skein's own interactive examples (examples/interactive-*.ts) run offline and say what happened. */
import { describe, expect, it } from "vitest";
import { main as contextMain } from "../examples/interactive-context.ts";
import { main as outputMain } from "../examples/interactive-output.ts";
import { main as steeringMain } from "../examples/interactive-steering.ts";
import { main as wireMain } from "../examples/interactive-wire.ts";

async function linesOf(main: (log: (line: string) => void) => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  await main((line) => lines.push(line));
  return lines;
}

describe("examples/interactive-*.ts", () => {
  it("steering stops the second deploy, and the follow-up runs after the answer", async () => {
    expect(await linesOf(steeringMain)).toEqual([
      "deploy: deployed api",
      "deploy: The user interrupted before this call ran, so it was not run: read their message below, then call it again if it is still needed.",
      "steer: Stop after api; do not deploy web.",
      "follow_up: Then write the rollback plan.",
      "result: Rollback plan: redeploy the previous api image.",
    ]);
  });

  it("a typed answer, after one refused for its shape", async () => {
    expect(await linesOf(outputMain)).toEqual([
      "success after 2 model calls",
      'refused: - highC: expected number; received string "nine"',
      "Oslo: 9 °C, rain: true",
    ]);
  });

  it("a 41-call run inside an 8,000-token window keeps its whole transcript", async () => {
    expect(await linesOf(contextMain)).toEqual([
      "success: No errors in 40 days of logs.",
      "82 messages kept in the result, 37 old results left out of requests",
      "the hook saw 41 model calls; the largest request held under 32,000 characters",
    ]);
  });

  it("streamed tool input, settings and native structured output over the OpenAI wire", async () => {
    const lines = await linesOf(wireMain);
    expect(lines.at(-2)).toBe("success: 05:12 and 17:40");
    expect(lines.at(-1)).toMatch(
      /^\d+ deltas; sent temperature 0\.2, response_format json_schema; 2 requests through the app's fetch$/,
    );
    expect(lines).toContain("approve search? (searches leave the machine) yes");
    const typing = lines.filter((line) => line.startsWith("typing search: "));
    expect(typing.length).toBeGreaterThanOrEqual(2);
    expect(typing.at(-1)).toBe('typing search: {"query":"tide tables for Brest"}');
  });
});

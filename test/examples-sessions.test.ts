/** skein's own session examples (examples/sessions-*.ts) run offline and say what happened. */
import { describe, expect, it } from "vitest";
import { main as continueMain } from "../examples/sessions-continue.ts";
import { main as recoveryMain } from "../examples/sessions-crash-recovery.ts";

describe("examples/sessions-continue.ts", () => {
  it("a second agent on the same SQLite file continues the conversation", async () => {
    const lines: string[] = [];
    await continueMain((line) => lines.push(line));
    expect(lines).toEqual([
      "run 1: Nice to meet you, Ada.",
      'run 2: You told me: "My name is Ada."',
      "run 2 sent the model 3 messages",
      "stored: idle, 4 messages, prompts: My name is Ada. | What is my name?",
    ]);
  });
});

describe("examples/sessions-crash-recovery.ts", () => {
  it("a child killed mid-tool; this process resumes: the finished call kept, the cut one outcome unknown", async () => {
    const lines: string[] = [];
    const calls = await recoveryMain((line) => lines.push(line));
    expect(calls).toEqual([
      "fetch_order: Order 7",
      expect.stringMatching(/^send_invoice: .*\(outcome unknown\)/),
    ]);
    expect(lines).toEqual([
      "child killed while send_invoice ran",
      "status before: interrupted",
      ...calls,
      "success: I will check the outbox before sending it again.",
      "invoices sent: 1",
    ]);
  }, 120_000);
});

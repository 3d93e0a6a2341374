// kill -9 at each point of the write-ahead log (RELIABILITY D1-D5, D10), against a SQLite file and
// a real Postgres server: a child runs the agent, the parent SIGKILLs it at the point the child
// reports, a second child resumes from the store alone. The model is the parent's mockServer,
// so requests are counted across both processes and a malformed transcript would be a 400.
import type { MockTurn } from "skein/testing";
import { afterEach, describe, expect, test } from "vitest";
import { resultText, toolResultsOf } from "../support/results.ts";
import { useChildBackings } from "./helpers.ts";
import {
  childSession,
  effects,
  expectWellFormed,
  killAt,
  type MockModel,
  outcomeOf,
  startMock,
} from "./recovery-helpers.ts";

const { dir, backings } = useChildBackings("skein-kill9-");

const FIRST = { inputTokens: 100, outputTokens: 10 };
const SECOND = { inputTokens: 200, outputTokens: 20 };
const charge = (id: string, target: string) => ({ id, name: "charge", input: { target } });
const lookup = (id: string, target: string) => ({ id, name: "lookup", input: { target } });
/** One reply with these calls, then a final answer. */
const batchThenDone = (calls: MockTurn["toolCalls"]): MockTurn[] => [
  { toolCalls: calls, usage: FIRST },
  { text: "All done.", usage: SECOND },
];

let model: MockModel | undefined;
afterEach(async () => {
  await model?.server.close();
  model = undefined;
});

let count = 0;
describe.each(backings)("%s", (_, backing) => {
  const session = (model: MockModel) =>
    childSession({ name: `k${++count}`, backing, dir, model, prompt: "Charge the order." });

  test("D1: killed after the input was logged, before the model answered: the prompt is sent again, once", async () => {
    model = await startMock([{ text: "Hello.", usage: FIRST }], { hangFirst: [0] });
    const s = session(model);
    const first = s.run();
    await first.until((lines) => lines.some((l) => / input$/.test(l)), "the input logged");
    await model.arrived(0);
    await killAt(first, () => true);
    expect(await s.log()).toEqual(["input"]);

    const { result } = await outcomeOf(s.resume());
    expect(result?.subtype).toBe("success");
    expect(result?.result).toBe("Hello.");
    // The unanswered request was made again, once; the user message is in it once.
    expect(model.turnsRequested()).toEqual([[0, 2]]);
    for (const body of model.bodies()) expect(body.messages).toHaveLength(1);
    expect(result?.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(result?.numTurns).toBe(1);
    expect(await s.log()).toEqual(["input", "resumed", "reply", "end"]);
  }, 120_000);

  test("D1/D10: killed while the reply streamed: nothing of it was logged, it is asked again", async () => {
    model = await startMock([{ text: "one two three four five", stallAfter: 5, times: 1 }]);
    const s = session(model);
    const first = s.run();
    await killAt(first, "event text_delta");
    expect(await s.log()).toEqual(["input"]);

    const { result } = await outcomeOf(s.resume());
    expect(result?.subtype).toBe("success");
    expect(result?.result).toBe("one two three four five");
    expect(model.turnsRequested()).toEqual([[0, 2]]);
    expectWellFormed(model, result!.messages);
  }, 120_000);

  test("D2: killed after the reply was logged, before its call started: the call runs once, the reply is not asked again", async () => {
    model = await startMock(batchThenDone([charge("c1", "order-7")]));
    const s = session(model);
    const first = s.run({ hangBefore: ["c1"] });
    await killAt(first, "blocked c1");
    expect(first.lines.some((l) => / reply$/.test(l))).toBe(true);
    expect(effects(s.effects)).toEqual({});

    const second = s.resume();
    const { result } = await outcomeOf(second);
    expect(result?.subtype).toBe("success");
    // Not started: prepared afresh (its hook again) and run once.
    expect(second.lines).toContain("before c1");
    expect(effects(s.effects)).toEqual({ c1: 1 });
    expect(model.turnsRequested()).toEqual([
      [0, 1],
      [1, 1],
    ]);
    const answered = toolResultsOf(model.bodies()[1]!.messages.at(-1));
    expect(answered.map((b) => [b.tool_use_id, resultText(b)])).toEqual([
      ["c1", "charge done for order-7"],
    ]);
    // Turns and usage go on from the log.
    expect(result?.numTurns).toBe(2);
    expect(result?.usage).toMatchObject({ inputTokens: 300, outputTokens: 30 });
    expectWellFormed(model, result!.messages);
  }, 120_000);

  test("D3: killed while a non-idempotent call ran: answered outcome unknown, never run again", async () => {
    model = await startMock(batchThenDone([charge("c1", "order-7")]));
    const s = session(model);
    const first = s.run({ hangIn: ["c1"] });
    await killAt(first, "hanging c1");
    expect(first.lines.some((l) => / started:c1$/.test(l))).toBe(true);

    const second = s.resume();
    const { result } = await outcomeOf(second);
    expect(result?.subtype).toBe("success");
    expect(effects(s.effects)).toEqual({ c1: 1 });
    expect(second.lines).not.toContain("before c1");
    const [block] = toolResultsOf(model.bodies()[1]!.messages.at(-1));
    expect(block?.tool_use_id).toBe("c1");
    expect(block?.is_error).toBe(true);
    expect(resultText(block)).toContain("outcome unknown");
    expect(model.turnsRequested()).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect(result?.numTurns).toBe(2);
    expect(result?.usage).toMatchObject({ inputTokens: 300, outputTokens: 30 });
    expectWellFormed(model, result!.messages);
  }, 120_000);

  test("D3: killed while an idempotent call ran: it runs again, once", async () => {
    model = await startMock(batchThenDone([lookup("c1", "order-7")]));
    const s = session(model);
    await killAt(s.run({ hangIn: ["c1"] }), "hanging c1");

    const second = s.resume();
    const { result } = await outcomeOf(second);
    expect(result?.subtype).toBe("success");
    expect(second.lines).toContain("before c1");
    expect(effects(s.effects)).toEqual({ c1: 2 });
    const [block] = toolResultsOf(model.bodies()[1]!.messages.at(-1));
    expect([block?.is_error, resultText(block)]).toEqual([false, "lookup done for order-7"]);
    expect(model.turnsRequested()).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expectWellFormed(model, result!.messages);
  }, 120_000);

  test("D4: killed after a non-idempotent call finished, before its result was logged: outcome unknown, not run again", async () => {
    model = await startMock(batchThenDone([charge("c1", "order-7")]));
    const s = session(model);
    await killAt(s.run({ holdAppend: ["result:c1"] }), "held result:c1");
    expect(effects(s.effects)).toEqual({ c1: 1 });

    const { result } = await outcomeOf(s.resume());
    expect(result?.subtype).toBe("success");
    expect(effects(s.effects)).toEqual({ c1: 1 });
    const [block] = toolResultsOf(model.bodies()[1]!.messages.at(-1));
    expect(block?.is_error).toBe(true);
    expect(resultText(block)).toContain("outcome unknown");
    expectWellFormed(model, result!.messages);
  }, 120_000);

  test("killed after the final reply was logged, before the end: success with that reply, no model call", async () => {
    model = await startMock(batchThenDone([charge("c1", "order-7")]));
    const s = session(model);
    await killAt(s.run({ holdAppend: ["end"] }), "held end");
    expect(model.turnsRequested()).toEqual([
      [0, 1],
      [1, 1],
    ]);

    const second = s.resume();
    const { result } = await outcomeOf(second);
    expect([result?.subtype, result?.result, result?.numTurns]).toEqual([
      "success",
      "All done.",
      2,
    ]);
    expect(model.turnsRequested()).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect(effects(s.effects)).toEqual({ c1: 1 });
    expect((await s.log()).slice(-2)).toEqual(["resumed", "end"]);
  }, 120_000);

  test("D5: killed mid parallel batch with 2 of 4 results logged: keeps 2, handles 2, sends all 4 in order", async () => {
    // c3 hangs in its handler; c4 shares c3's target, so it waits behind it and never starts.
    const calls = [charge("c1", "a"), lookup("c2", "b"), charge("c3", "k"), charge("c4", "k")];
    model = await startMock(batchThenDone(calls));
    const s = session(model);
    const first = s.run({ hangIn: ["c3"] });
    await killAt(
      first,
      (lines) =>
        lines.includes("hanging c3") &&
        lines.some((l) => / result:c1$/.test(l)) &&
        lines.some((l) => / result:c2$/.test(l)),
    );
    expect(first.lines.some((l) => / started:c4$/.test(l))).toBe(false);
    expect(effects(s.effects)).toEqual({ c1: 1, c2: 1, c3: 1 });

    const second = s.resume();
    const { result } = await outcomeOf(second);
    expect(result?.subtype).toBe("success");
    // Logged results are kept (their tool events again, never their hooks or handlers).
    expect(effects(s.effects)).toEqual({ c1: 1, c2: 1, c3: 1, c4: 1 });
    expect(second.lines.filter((l) => l.startsWith("before "))).toEqual(["before c4"]);
    expect(second.lines).toEqual(
      expect.arrayContaining(["event tool_start:c1", "event tool_end:c2"]),
    );
    const blocks = toolResultsOf(model.bodies()[1]!.messages.at(-1));
    expect(blocks.map((b) => b.tool_use_id)).toEqual(["c1", "c2", "c3", "c4"]);
    expect(blocks.map((b) => [resultText(b), b.is_error])).toEqual([
      ["charge done for a", false],
      ["lookup done for b", false],
      [expect.stringContaining("(outcome unknown)"), true],
      ["charge done for k", false],
    ]);
    expect(model.turnsRequested()).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect(result?.numTurns).toBe(2);
    expectWellFormed(model, result!.messages);
  }, 120_000);
});

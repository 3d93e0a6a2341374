// Paused runs across a kill (D9), resumes that must be refused, and two processes recovering one
// session at once, against a SQLite file and a real Postgres server. Children run the agent; the
// model is the parent's mockServer (requests counted across processes, malformed ones a 400).
import { anthropic, createBareAgent, loadSession, ResumeError } from "skein";
import type { MockTurn } from "skein/testing";
import { afterEach, describe, expect, test } from "vitest";
import { resultText, toolResultsOf } from "../support/results.ts";
import { useChildBackings } from "./helpers.ts";
import {
  type ChildOutcome,
  childSession,
  effects,
  expectWellFormed,
  killAt,
  type MockModel,
  outcomeOf,
  SECRET,
  startMock,
} from "./recovery-helpers.ts";

const { dir, backings } = useChildBackings("skein-recovery-");

const charge = (id: string, target: string) => ({ id, name: "charge", input: { target } });
const TURNS: MockTurn[] = [
  {
    toolCalls: [charge("c1", "order-7"), charge("c2", "order-8")],
    usage: { inputTokens: 100, outputTokens: 10 },
  },
  { text: "One charged, one refused.", usage: { inputTokens: 200, outputTokens: 20 } },
];

/**
 * How the other recoverer lost: its resume marker or a later append lost the race
 * (SessionConflictError, rejected or as the run's error), or it read the log only after the
 * winner's marker, and then found no paused run to apply approvals to, or nothing to resume.
 */
const LOST = /^(SessionConflictError|ResumeError: .*(not paused|nothing to resume).*)$/;
function loserName(outcome: ChildOutcome): string {
  if (outcome.rejected?.name === "ResumeError") return `ResumeError: ${outcome.rejected.message}`;
  if (outcome.rejected) return outcome.rejected.name;
  return outcome.result?.subtype === "error_during_execution"
    ? String(outcome.result.error?.name)
    : `resolved ${outcome.result?.subtype}`;
}

let model: MockModel | undefined;
afterEach(async () => {
  await model?.server.close();
  model = undefined;
});

let count = 0;
describe.each(backings)("%s", (_, backing) => {
  const session = (model: MockModel) =>
    childSession({ name: `r${++count}`, backing, dir, model, prompt: "Charge both orders." });

  test("D9: paused on approval, killed, a new process resumes from the store: each decision applies to its call", async () => {
    model = await startMock(TURNS);
    const s = session(model);
    const first = s.run({ ask: true, stayAlive: true });
    const paused = await outcomeOf(first, true);
    expect(paused.result?.subtype).toBe("paused");
    expect(paused.result?.pending?.map((call) => [call.id, call.reason])).toEqual([
      ["c1", "approval"],
      ["c2", "approval"],
    ]);
    await killAt(first, () => true);
    const loaded = await s.withStore((store) => loadSession(store, s.sessionId));
    expect(loaded?.status).toBe("paused");
    expect(loaded?.pending?.map((call) => call.id)).toEqual(["c1", "c2"]);

    const second = s.resume({
      ask: true,
      action: { kind: "resume", approvals: { c1: true, c2: false } },
    });
    const { result } = await outcomeOf(second);
    expect(result?.subtype).toBe("success");
    expect(effects(s.effects)).toEqual({ c1: 1 });
    const blocks = toolResultsOf(model.bodies()[1]!.messages.at(-1));
    expect(blocks.map((b) => [b.tool_use_id, b.is_error])).toEqual([
      ["c1", false],
      ["c2", true],
    ]);
    expect(resultText(blocks[0])).toBe("charge done for order-7");
    expect(model.turnsRequested()).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect(result?.numTurns).toBe(2);
    expect(result?.usage).toMatchObject({ inputTokens: 300, outputTokens: 30 });
    expectWellFormed(model, result!.messages);
  }, 120_000);

  test("the secret from SKEIN_APPROVAL_SECRET alone: paused in one process, refused by a process with another, resumed by the next with the same", async () => {
    model = await startMock(TURNS);
    const s = session(model);
    const shared = { secret: undefined, envSecret: "the deployment's shared secret" };
    const first = s.run({ ...shared, ask: true });
    expect((await outcomeOf(first)).result?.subtype).toBe("paused");
    const before = await s.lastSeq();

    const approvals = { c1: true, c2: true };
    const stranger = await outcomeOf(
      s.resume({
        secret: undefined,
        envSecret: "another deployment's secret",
        ask: true,
        action: { kind: "resume", approvals },
      }),
    );
    expect(stranger.rejected?.name).toBe("ResumeError");
    expect(stranger.rejected?.message).toContain("SKEIN_APPROVAL_SECRET");
    expect(await s.lastSeq()).toBe(before);
    expect(effects(s.effects)).toEqual({});

    const { result } = await outcomeOf(
      s.resume({ ...shared, ask: true, action: { kind: "resume", approvals } }),
    );
    expect(result?.subtype).toBe("success");
    expect(effects(s.effects)).toEqual({ c1: 1, c2: 1 });
    expectWellFormed(model, result!.messages);
  }, 90_000);

  test("D9: a resuming agent without the paused call's tool is refused before any side effect, writing nothing", async () => {
    model = await startMock(TURNS);
    const s = session(model);
    const first = s.run({ ask: true, stayAlive: true });
    expect((await outcomeOf(first, true)).result?.subtype).toBe("paused");
    await killAt(first, () => true);
    const before = await s.lastSeq();

    const refused = await outcomeOf(
      s.resume({ tools: ["lookup"], action: { kind: "resume", approvals: { c1: true } } }),
    );
    expect(refused.rejected?.name).toBe("ResumeError");
    expect(await s.lastSeq()).toBe(before);
    expect(effects(s.effects)).toEqual({});
    expect(model.turnsRequested()).toEqual([[0, 1]]);

    // The session is still paused: the right agent resumes it.
    const { result } = await outcomeOf(
      s.resume({ ask: true, action: { kind: "resume", approvals: { c1: true, c2: true } } }),
    );
    expect(result?.subtype).toBe("success");
    expect(effects(s.effects)).toEqual({ c1: 1, c2: 1 });
  }, 120_000);

  test("a resume naming calls of a run that was interrupted, not paused, is a ResumeError and writes nothing", async () => {
    model = await startMock(TURNS);
    const s = session(model);
    await killAt(s.run({ hangBefore: ["c1"] }), "blocked c1");
    const before = await s.lastSeq();
    await s.withStore(async (store) => {
      const agent = createBareAgent({
        model: anthropic({ baseURL: s.modelUrl, apiKey: "test", maxRetries: 0 }),
        sessionStore: store,
        approvalSecret: SECRET,
      });
      for (const options of [{ approvals: { c1: true } }, { toolOutputs: { c1: "done" } }]) {
        const error = await agent.resume({ sessionId: s.sessionId }, options).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(ResumeError);
        expect((error as Error).message).toMatch(/interrupted.*not paused/);
      }
      expect((await loadSession(store, s.sessionId))?.status).toBe("interrupted");
    });
    expect(await s.lastSeq()).toBe(before);
    expect(effects(s.effects)).toEqual({});
  }, 120_000);

  test("two processes recovering one session at once: the call runs once, the other recoverer loses with SessionConflictError", async () => {
    model = await startMock(TURNS);
    const s = session(model);
    // Crashed after the reply was logged, before any call started.
    await killAt(s.run({ hangBefore: ["c1"] }), "blocked c1");
    const racers = [s.resume({ waitForGo: true }), s.resume({ waitForGo: true })];
    await Promise.all(racers.map((child) => child.until((l) => l.includes("ready"), "ready")));
    for (const child of racers) child.child.stdin!.write("go\n");
    const outcomes = await Promise.all(racers.map((child) => outcomeOf(child)));

    // Each call ran once across both recoverers; one of them finished the run.
    expect(effects(s.effects)).toEqual({ c1: 1, c2: 1 });
    const won = outcomes.filter((o) => o.result?.subtype === "success");
    expect(won).toHaveLength(1);
    expect(loserName(outcomes.find((o) => o !== won[0])!)).toMatch(LOST);
    // The logged reply is never asked again. The next one may be asked by both: a model call is
    // no side effect, and the loser's reply cannot be logged.
    expect(model.turnsRequested()[0]).toEqual([0, 1]);
    expect(model.turnsRequested()[1]?.[0]).toBe(1);
    expectWellFormed(model, won[0]!.result!.messages);
    const loaded = await s.withStore((store) => loadSession(store, s.sessionId));
    expect(loaded?.status).toBe("idle");
  }, 120_000);

  test("two processes resuming one paused session with approvals at once: each call runs once", async () => {
    model = await startMock(TURNS);
    const s = session(model);
    const first = s.run({ ask: true, stayAlive: true });
    expect((await outcomeOf(first, true)).result?.subtype).toBe("paused");
    await killAt(first, () => true);
    const approve = { kind: "resume" as const, approvals: { c1: true, c2: false } };
    const racers = [
      s.resume({ ask: true, waitForGo: true, action: approve }),
      s.resume({ ask: true, waitForGo: true, action: approve }),
    ];
    await Promise.all(racers.map((child) => child.until((l) => l.includes("ready"), "ready")));
    for (const child of racers) child.child.stdin!.write("go\n");
    const outcomes = await Promise.all(racers.map((child) => outcomeOf(child)));

    expect(effects(s.effects)).toEqual({ c1: 1 });
    const won = outcomes.filter((o) => o.result?.subtype === "success");
    expect(won).toHaveLength(1);
    expect(loserName(outcomes.find((o) => o !== won[0])!)).toMatch(LOST);
    expectWellFormed(model, won[0]!.result!.messages);
  }, 120_000);
});

import { performance } from "node:perf_hooks";
import { addUsage } from "../core/messages.ts";
import type { SDKResultMessage, Usage } from "../index.ts";
import type { RunTotals } from "./format.ts";

const noUsage = (): Usage => ({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
});

/**
 * The usage line's numbers for everything one command ran, printed once at its end. A run goes
 * in stretches (the first, then one per resume after approvals); each ends with a result whose
 * turns and tokens count the run from its start and whose time is that stretch's alone, so the
 * last result's counts stand and the times add up: the time the agent worked, not the time the
 * user took to answer. Runs one after another (a session's unfinished run, then the prompt) add.
 */
export class RunTally {
  #earlier: RunTotals = { numTurns: 0, usage: noUsage(), durationMs: 0 };
  #run: Pick<RunTotals, "numTurns" | "usage"> = { numTurns: 0, usage: noUsage() };
  #durationMs = 0;
  #stretchStartedAt = performance.now();
  #lastSubtype: SDKResultMessage["subtype"] | undefined;

  /** A stream of the run starts: its time counts from here. */
  startStretch(): void {
    this.#stretchStartedAt = performance.now();
  }

  /** How long the current stretch has been going. */
  stretchElapsed(): number {
    return performance.now() - this.#stretchStartedAt;
  }

  /** A stretch ended with this result (or the one made for an abort). */
  endStretch(
    result: Pick<SDKResultMessage, "numTurns" | "usage" | "durationMs" | "subtype">,
  ): void {
    this.#run = { numTurns: result.numTurns, usage: { ...result.usage } };
    this.#durationMs += result.durationMs;
    this.#lastSubtype = result.subtype;
  }

  /** The next stream is another run (its counts start again from zero). */
  nextRun(): void {
    this.#earlier = this.totals();
    this.#run = { numTurns: 0, usage: noUsage() };
    this.#durationMs = 0;
  }

  totals(): RunTotals {
    const earlier = this.#earlier;
    const usage = { ...earlier.usage };
    addUsage(usage, this.#run.usage);
    return {
      numTurns: earlier.numTurns + this.#run.numTurns,
      usage,
      durationMs: earlier.durationMs + this.#durationMs,
    };
  }

  /** Worth a line: tokens were spent, or the run succeeded (a run that failed before the model answered has only its error to show). */
  get worthShowing(): boolean {
    const { usage } = this.totals();
    const used = usage.inputTokens + usage.outputTokens + usage.cacheReadInputTokens > 0;
    return used || this.#lastSubtype === "success";
  }
}

// The run's lifecycle hooks (design/policy.md): sessionStart, userPromptSubmit, stop and
// sessionEnd, each over the run's chain (its agent's own hooks, then its ancestors').

import { describeThrown, HookError } from "../core/errors.ts";
import type { ContentBlock, Message, Usage } from "../core/messages.ts";
import { spend } from "./budget.ts";
import { deliverQueued } from "./deliver.ts";
import { finish } from "./finish.ts";
import { check, guardrailsOf } from "./guardrails.ts";
import { callHook, chainOf, contextFor, type HookName, hasHook } from "./hooks.ts";
import type { RunContext } from "./loop.ts";
import { placeOf } from "./model-call.ts";
import { SteeringQueue } from "./steering.ts";
import type { ErrorInfo, SDKResultMessage } from "./types.ts";

/** Calls every hook of `name` in the run's chain; the first failure is returned as the run's error. */
async function each(
  run: RunContext,
  name: HookName,
  base: object,
  signal: AbortSignal,
  onAnswer?: (answer: unknown) => boolean | undefined,
): Promise<ErrorInfo | undefined> {
  for (const link of chainOf(placeOf(run), name)) {
    let answer: unknown;
    try {
      answer = await callHook(
        link,
        contextFor(link, base, run.link.parentCallId),
        { event: name },
        signal,
      );
    } catch (error) {
      if (signal.aborted) throw error;
      return describeThrown(error instanceof HookError ? error : new HookError(String(error)));
    }
    // `true`: the answer decides; the hooks further out are not asked.
    if (onAnswer?.(answer) === true) return undefined;
  }
  return undefined;
}

/** `sessionStart`, as the run starts. */
export function sessionStart(
  run: RunContext,
  source: "new" | "continue" | "resume",
): Promise<ErrorInfo | undefined> | undefined {
  if (!hasHook(placeOf(run), "sessionStart")) return undefined;
  return each(run, "sessionStart", { sessionId: run.sessionId, source }, run.signal);
}

export type PromptVerdict = { error: ErrorInfo } | { blocked: string } | undefined;

/**
 * `userPromptSubmit` on a new run's prompt, before it is logged or sent: `{ prompt }` replaces
 * its text, `{ block: true, reason }` ends the run with nothing sent.
 */
export async function userPromptSubmit(run: RunContext): Promise<PromptVerdict> {
  if (!hasHook(placeOf(run), "userPromptSubmit")) return undefined;
  let blocked: string | undefined;
  const prompt = run.messages.at(-1)!;
  const error = await each(
    run,
    "userPromptSubmit",
    {
      prompt: textOfContent(prompt.content),
      content: prompt.content,
      sessionId: run.sessionId,
      signal: run.signal,
    },
    run.signal,
    (answer) => {
      if (typeof answer !== "object" || answer === null) return undefined;
      const given = answer as { block?: unknown; reason?: unknown; prompt?: unknown };
      if (given.block === true) {
        blocked =
          typeof given.reason === "string" && given.reason !== ""
            ? given.reason
            : "a userPromptSubmit hook blocked the prompt";
        return true;
      }
      if (typeof given.prompt === "string")
        run.messages[run.messages.length - 1] = withText(run.messages.at(-1)!, given.prompt);
      return undefined;
    },
  );
  if (error) return { error };
  if (blocked !== undefined) {
    // Nothing of the prompt is kept: not in the log, not in the result's transcript.
    run.messages.pop();
    return { blocked };
  }
  return undefined;
}

/**
 * `stop` when the run would end with `result`: a `{ continue: message }` (within
 * `maxStopContinuations`) queues that message as the next user turn and delivers it.
 */
export async function stopHooks(
  run: RunContext,
  result: string,
): Promise<{ error: ErrorInfo } | { continued: true } | undefined> {
  if (!hasHook(placeOf(run), "stop")) return undefined;
  const active = (run.stopContinuations ?? 0) > 0;
  let message: string | undefined;
  const error = await each(
    run,
    "stop",
    { sessionId: run.sessionId, result, stopHookActive: active },
    run.signal,
    (answer) => {
      const given = (answer as { continue?: unknown } | null)?.continue;
      if (typeof given === "string" && given !== "") {
        message = given;
        return true;
      }
      return undefined;
    },
  );
  if (error) return { error };
  if (message === undefined || (run.stopContinuations ?? 0) >= run.config.maxStopContinuations)
    return undefined;
  run.stopContinuations = (run.stopContinuations ?? 0) + 1;
  run.steering ??= new SteeringQueue();
  run.steering.push("follow_up", message);
  await deliverQueued(run, "final");
  return { continued: true };
}

/** `sessionEnd` once the result is decided; a failing hook turns the result into its error. */
export async function sessionEnd(
  run: RunContext,
  result: SDKResultMessage | undefined,
): Promise<SDKResultMessage | undefined> {
  if (!hasHook(placeOf(run), "sessionEnd")) return result;
  // The run's signal may be aborted already: the hook still hears of the end.
  const signal = new AbortController().signal;
  const reason = result?.subtype ?? "aborted";
  const error = await each(run, "sessionEnd", { sessionId: run.sessionId, reason }, signal);
  if (!error || !result) return result;
  return { ...result, subtype: "error_during_execution", isError: true, result: "", error };
}

function textOfContent(content: Message["content"]): string {
  if (typeof content === "string") return content;
  return content
    .map((block) => (block.type === "text" ? block.text : ""))
    .filter(Boolean)
    .join("\n");
}

/** The prompt with its text replaced; images stay. */
function withText(message: Message, text: string): Message {
  if (typeof message.content === "string") return { ...message, content: text };
  const rest = message.content.filter((block) => block.type !== "text");
  return { ...message, content: [{ type: "text", text } as ContentBlock, ...rest] };
}

/** A model call's tokens (and dollars, when priced) against every budget over the run. */
export function spendTurn(run: RunContext, usage: Partial<Usage> | undefined): void {
  const budgets = run.link.budgets;
  if (!budgets || !usage) return;
  const usd = (usage as { costUsd?: number }).costUsd;
  spend(budgets, run.link.tree, {
    tokens: (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0),
    ...(usd !== undefined ? { usd } : {}),
  });
}

/**
 * The input guardrails on a new run's prompt: blocking ones before the first model call, the
 * others beside it (calls with side effects wait for them, and so does the run's end).
 */
export async function inputGuardrails(run: RunContext): Promise<void> {
  const rails = guardrailsOf(run, "input");
  if (rails.length === 0) return;
  const prompt = run.messages.at(-1)!;
  const base = {
    sessionId: run.sessionId,
    prompt: textOfContent(prompt.content),
    content: prompt.content,
  };
  const env = { emit: run.emit, signal: run.signal, tree: run.link.tree };
  const blocking = rails.filter(({ rail }) => rail.blocking === true);
  const beside = rails.filter(({ rail }) => rail.blocking !== true);
  if (blocking.length > 0) await check(blocking, "input", base, env);
  if (beside.length > 0) run.link.inputGuard = check(beside, "input", base, env);
}

/**
 * Before a run ends with an answer: the input guardrails settled, the tree not tripped, the
 * output guardrails passed. A result when the run must end otherwise.
 */
export async function beforeEnd(
  run: RunContext,
  outcome: { result: string; structuredResult?: unknown },
): Promise<SDKResultMessage | undefined> {
  if (run.link.inputGuard) await run.link.inputGuard;
  const rails = guardrailsOf(run, "output");
  if (rails.length > 0 && !run.link.tree?.tripped) {
    const base = {
      sessionId: run.sessionId,
      result: outcome.result,
      ...(outcome.structuredResult !== undefined
        ? { structuredResult: outcome.structuredResult }
        : {}),
    };
    await check(rails, "output", base, { emit: run.emit, signal: run.signal, tree: run.link.tree });
  }
  const tripped = run.link.tree?.tripped;
  if (!tripped) return undefined;
  return finish(run, tripped.subtype, { error: tripped.error });
}

// Guardrails (design/policy.md): checks on the prompt, the answer, and each tool call's input and
// output. A tripwire ends the whole tree through its shared abort, before a side effect starts.

import { ConfigurationError } from "../core/errors.ts";
import type { Message } from "../core/messages.ts";
import { describeValue } from "../core/options.ts";
import type { ToolResult } from "../tools/types.ts";
import { spend, type TreeState } from "./budget.ts";
import { type CallEnvironment, type CallRecord, cancelledResult, errorResult } from "./call.ts";
import type { RunLink } from "./link.ts";
import { isReadOnly } from "./policy.ts";
import { guardrailStarts } from "./trace.ts";
import type { AgentEvent } from "./types.ts";

/** What a check answers: `tripwire: true` ends the run (a throw counts as a tripwire). */
export interface GuardrailResult {
  tripwire: boolean;
  info?: unknown;
}

export interface Guardrail<C> {
  name: string;
  check: (context: C) => GuardrailResult | Promise<GuardrailResult>;
  /** Input guardrails only: run before the first model call instead of beside it. */
  blocking?: boolean;
}

interface Place {
  sessionId: string;
  /** 0 for the registering agent's own run. */
  depth: number;
  signal: AbortSignal;
}

export interface InputGuardrailContext extends Place {
  prompt: string;
  content: Message["content"];
}
export interface OutputGuardrailContext extends Place {
  result: string;
  structuredResult?: unknown;
}
export interface ToolGuardrailContext extends Place {
  callId: string;
  name: string;
  input: unknown;
}
export interface ToolOutputGuardrailContext extends ToolGuardrailContext {
  result: ToolResult;
}

export interface Guardrails {
  input?: Guardrail<InputGuardrailContext>[];
  output?: Guardrail<OutputGuardrailContext>[];
  toolInput?: Guardrail<ToolGuardrailContext>[];
  toolOutput?: Guardrail<ToolOutputGuardrailContext>[];
}

export type GuardrailPhase = keyof Guardrails;

/** An agent's guardrails, checked, with the depth of the run that registered them. */
export interface ResolvedGuardrails {
  lists: { [P in GuardrailPhase]?: Guardrail<any>[] };
  depth: number;
}

const PHASES: GuardrailPhase[] = ["input", "output", "toolInput", "toolOutput"];

export function resolveGuardrails(prefix: string, given: unknown): ResolvedGuardrails | undefined {
  if (given === undefined) return undefined;
  if (typeof given !== "object" || given === null || Array.isArray(given))
    throw new ConfigurationError(
      `${prefix}: guardrails must be { input?, output?, toolInput?, toolOutput? }, received ${describeValue(given)}.`,
    );
  const lists: ResolvedGuardrails["lists"] = {};
  for (const [phase, list] of Object.entries(given)) {
    if (!PHASES.includes(phase as GuardrailPhase))
      throw new ConfigurationError(
        `${prefix}: guardrails has an unknown key "${phase}"; the phases are ${PHASES.join(", ")}.`,
      );
    if (list === undefined) continue;
    if (!Array.isArray(list))
      throw new ConfigurationError(
        `${prefix}: guardrails.${phase} must be an array of { name, check, blocking? }.`,
      );
    list.forEach((entry: unknown, index) => {
      const at = `${prefix}: guardrails.${phase}[${index}]`;
      const rail = entry as Partial<Guardrail<unknown>> | null;
      if (typeof rail !== "object" || rail === null || typeof rail.name !== "string" || !rail.name)
        throw new ConfigurationError(`${at} must have a name (a non-empty string).`);
      if (typeof rail.check !== "function")
        throw new ConfigurationError(`${at} ("${rail.name}") must have a check function.`);
      if (rail.blocking !== undefined && phase !== "input")
        throw new ConfigurationError(
          `${at} ("${rail.name}"): blocking is for input guardrails only (the others always run before what they guard).`,
        );
    });
    if (list.length > 0) lists[phase as GuardrailPhase] = list as Guardrail<unknown>[];
  }
  return Object.keys(lists).length > 0 ? { lists, depth: 0 } : undefined;
}

/** A run's guardrails of one phase: its own agent's, then its ancestors', with each one's depth. */
export function guardrailsOf(
  run: { config: { guardrails?: ResolvedGuardrails }; link?: RunLink },
  phase: GuardrailPhase,
): { rail: Guardrail<any>; depth: number }[] {
  const depth = run.link?.depth ?? 0;
  const out: { rail: Guardrail<any>; depth: number }[] = [];
  for (const rail of run.config.guardrails?.lists[phase] ?? []) out.push({ rail, depth: 0 });
  for (const level of run.link?.guardrails ?? [])
    for (const rail of level.lists[phase] ?? []) out.push({ rail, depth: depth - level.depth });
  return out;
}

/**
 * Runs checks (in parallel); each result is a `guardrail` event. A tripwire trips the tree:
 * every run of it ends with subtype `error_guardrail`. Resolves whether one tripped.
 */
export async function check(
  rails: { rail: Guardrail<any>; depth: number }[],
  phase: GuardrailPhase,
  base: object,
  env: { emit: CallEnvironment["emit"]; signal: AbortSignal; tree?: TreeState },
): Promise<boolean> {
  const outcomes = await Promise.all(
    rails.map(async ({ rail, depth }) => {
      const startedAt = Date.now();
      let result: GuardrailResult;
      try {
        const answer = await rail.check({ ...base, depth, signal: env.signal });
        result =
          typeof answer === "object" && answer !== null && typeof answer.tripwire === "boolean"
            ? answer
            : { tripwire: true, info: "the check answered no { tripwire: boolean }" };
      } catch (error) {
        result = { tripwire: true, info: error instanceof Error ? error.message : String(error) };
      }
      const event: AgentEvent = {
        type: "guardrail",
        name: rail.name,
        phase,
        tripped: result.tripwire,
        ...(result.info !== undefined ? { info: result.info } : {}),
      };
      guardrailStarts.set(event, startedAt);
      env.emit(event);
      if (result.tripwire) {
        const info = result.info === undefined ? "" : `: ${describeInfo(result.info)}`;
        env.tree?.trip({
          subtype: "error_guardrail",
          error: {
            name: "GuardrailTripwireError",
            message: `The ${phase} guardrail "${rail.name}" tripped${info}`,
          },
        });
      }
      return result.tripwire;
    }),
  );
  return outcomes.some(Boolean);
}

function describeInfo(info: unknown): string {
  if (typeof info === "string") return info;
  try {
    return JSON.stringify(info);
  } catch {
    return String(info);
  }
}

/**
 * The tool input guardrails of a call the rules did not deny: after the rules (and the mode),
 * before approval is asked (design/policy.md). Undefined when no toolInput guardrail applies;
 * else resolves whether the call may go on (when not, its result is set).
 */
export function checkToolInput(
  record: CallRecord,
  env: CallEnvironment,
): Promise<boolean> | undefined {
  if (record.tool === env.config.output?.tool) return undefined;
  const rails = guardrailsOf(env, "toolInput");
  if (rails.length === 0) return undefined;
  return toolInputPasses(record, env, rails);
}

async function toolInputPasses(
  record: CallRecord,
  env: CallEnvironment,
  rails: { rail: Guardrail<any>; depth: number }[],
): Promise<boolean> {
  const tree = env.link?.tree;
  if (tree?.tripped || env.signal.aborted) return refuse(record);
  const input = record.input;
  const base = { sessionId: env.sessionId, callId: record.id, name: record.name, input };
  if (await check(rails, "toolInput", base, { emit: env.emit, signal: env.signal, tree }))
    return refuse(record);
  record.guardedInput = { input };
  return true;
}

/**
 * Before a call's handler starts: the tree has not tripped, the run's input guardrails have
 * settled (unless the call changes nothing), the tool call budget holds. The tool input
 * guardrails ran before approval; they run again here only on input they have not passed (an
 * approval's `updatedInput`, a call resumed from a paused state). False (with the call's result
 * set) when the call must not run.
 */
export async function beforeHandler(record: CallRecord, env: CallEnvironment): Promise<boolean> {
  const link = env.link;
  const tree = link?.tree;
  if (link?.inputGuard && !isReadOnly(record.tool!)) await link.inputGuard;
  if (tree?.tripped || env.signal.aborted) return refuse(record);
  if (record.guardedInput?.input !== record.input || record.guardedInput === undefined) {
    const checking = checkToolInput(record, env);
    if (checking && !(await checking)) return false;
  }
  if (spend(link?.budgets, tree, { toolCalls: 1 })) return refuse(record);
  return true;
}

/** After the handler: the tool output guardrails, before the model sees the result. */
export async function afterHandler(record: CallRecord, env: CallEnvironment): Promise<void> {
  const rails = guardrailsOf(env, "toolOutput");
  if (rails.length === 0 || !record.result) return;
  const base = {
    sessionId: env.sessionId,
    callId: record.id,
    name: record.name,
    input: record.input,
    result: record.result,
  };
  if (
    await check(rails, "toolOutput", base, {
      emit: env.emit,
      signal: env.signal,
      tree: env.link?.tree,
    })
  )
    record.result = errorResult(
      `The result of "${record.name}" was withheld: ${env.link?.tree?.tripped?.error.message ?? "a guardrail tripped"}.`,
      "blocked",
    );
}

/** Whether a call must pass `beforeHandler` (cheap: most runs have no policy to check). */
export function guarded(env: CallEnvironment): boolean {
  const link = env.link;
  if (!link?.tree) return false;
  return (
    link.tree.tripped !== undefined ||
    link.budgets !== undefined ||
    link.inputGuard !== undefined ||
    env.config.guardrails !== undefined ||
    link.guardrails !== undefined
  );
}

function refuse(record: CallRecord): false {
  record.result = cancelledResult(record, "before it started");
  record.finishedAt = performance.now();
  return false;
}

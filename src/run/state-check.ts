import { ResumeError } from "../core/errors.ts";
import type { ContentBlock, Message } from "../core/messages.ts";
import { canonicalJson } from "./seal.ts";
import type { PausedCall, RunState } from "./types.ts";

/*
 * What a state handed to `resume` must look like before anything of it is trusted. A state the
 * engine wrote always tells one story: every tool_use id appears once in the transcript; each
 * assistant message's calls are answered, all of them, by the next message (one tool_result per
 * call); the steps stand for the last model replies, one each, holding that very message and its
 * calls; and, in a paused state, the batch is the last message's calls, one to one and in order,
 * none answered yet. A state edited as JSON (a call duplicated to run twice, calls reordered, a
 * finished call turned back into a waiting one, an assistant message copied) breaks one of these,
 * and is refused here, before any hook, handler or approval runs.
 *
 * The batch's inputs are not compared with the transcript's: the batch holds the input as
 * validated and rewritten (prepareArguments, hooks, coercion), the tool_use the model's own. The
 * seals of the calls waiting for approval cover both (see `batchDigest`). A reply marked
 * `incomplete` (its stream failed) has no step, and its calls need no answer.
 */

const ALTERED =
  "the state was altered after the pause; resume the paused result's `state` unchanged";

function refuse(what: string): never {
  throw new ResumeError(`resume: ${what}; ${ALTERED}.`);
}

/** Throws `ResumeError` unless the state's transcript, steps and batch agree (see above). */
export function checkStateStory(state: RunState): void {
  const { messages } = state;
  const replies: Message[] = [];
  const seen = new Set<string>();
  // The calls of the message just before: those that must be answered now, and those that may.
  let owed: string[] = [];
  let optional = new Set<string>();
  for (const [index, message] of messages.entries()) {
    const blocks = blocksOf(message, index);
    const answered = new Set<string>();
    for (const block of blocks) {
      if (block.type !== "tool_result") continue;
      const id: unknown = block.tool_use_id;
      const answerable =
        typeof id === "string" && (owed.includes(id) || optional.has(id)) && !answered.has(id);
      if (!answerable)
        refuse(
          `message ${index} holds a tool_result for "${String(id)}", which answers no unanswered call of the message before it`,
        );
      answered.add(id);
    }
    const missing = owed.filter((id) => !answered.has(id));
    if (missing.length > 0)
      refuse(`the call "${missing[0]}" is not answered by the message after it (message ${index})`);
    owed = [];
    optional = new Set();
    if (message.role !== "assistant") continue;
    const incomplete = message.incomplete === true;
    if (!incomplete) replies.push(message);
    for (const block of blocks) {
      if (block.type !== "tool_use") continue;
      const { id, name } = block as { id: unknown; name: unknown };
      if (typeof id !== "string" || id === "" || typeof name !== "string")
        refuse(`message ${index} holds a tool_use without a string id and name`);
      if (seen.has(id)) refuse(`the tool_use id "${id}" appears more than once in the transcript`);
      seen.add(id);
      if (incomplete) optional.add(id);
      else owed.push(id);
    }
  }
  const calls = state.batch ? batchCalls(state.batch.calls) : undefined;
  if (calls) checkBatch(calls, messages.at(-1), owed);
  else if (owed.length > 0)
    refuse(`the last message's call "${owed[0]}" has neither a result nor a paused batch entry`);
  checkSteps(state, replies, calls);
}

/** The batch is the last message's calls, one to one, in order; each id once. */
function checkBatch(calls: PausedCall[], last: Message | undefined, uses: string[]): void {
  if (last?.role !== "assistant" || uses.length === 0)
    refuse("the state has a paused batch but its transcript does not end with the calls it paused");
  const ids = new Set<string>();
  for (const [index, call] of calls.entries()) {
    if (ids.has(call.id)) refuse(`the batch holds the call "${call.id}" more than once`);
    ids.add(call.id);
    const status: unknown = call.status;
    if (status !== "done" && status !== "pending")
      refuse(`the call "${call.id}" has an unknown status`);
    const reason: unknown = call.status === "pending" ? call.reason : "external";
    if (reason !== "external" && reason !== "approval" && reason !== "held" && reason !== "child")
      refuse(`the call "${call.id}" waits for an unknown reason`);
    if (reason === "child") {
      const nested: unknown = (call as { state?: unknown }).state;
      if (typeof nested !== "object" || nested === null || Array.isArray(nested))
        refuse(`the call "${call.id}" waits in a child run but holds no state for it`);
    }
    if (call.status === "done") checkDoneCall(call);
    if (uses[index] !== call.id)
      refuse(
        `the batch's call ${index} is "${call.id}" where the transcript's last message has ${uses[index] === undefined ? "no call" : `"${uses[index]}"`}`,
      );
  }
  if (calls.length !== uses.length)
    refuse(`the transcript's call "${uses[calls.length]}" has no entry in the paused batch`);
  const named = new Map(
    (last.content as ContentBlock[]).flatMap((block) =>
      block.type === "tool_use" ? [[block.id, block.name] as const] : [],
    ),
  );
  for (const call of calls)
    if (named.get(call.id) !== call.name)
      refuse(
        `the call "${call.id}" names the tool "${call.name}" where the transcript has another`,
      );
}

/**
 * The steps stand for the last model replies, one each (a run's steps may start later than its
 * transcript, as after a session's earlier runs), holding that very message and its calls; the
 * paused batch's step lists its finished calls, as they are in the batch.
 */
function checkSteps(state: RunState, replies: Message[], calls?: PausedCall[]): void {
  const { steps, numTurns } = state;
  const first = replies.length - steps.length;
  if (first < 0 || !Number.isInteger(numTurns) || numTurns < steps.length)
    refuse(
      `the state has ${steps.length} steps and numTurns ${numTurns} for ${replies.length} model replies`,
    );
  if (calls && steps.length === 0) refuse("the state has a paused batch but no step for it");
  for (const [index, step] of steps.entries()) {
    const reply = replies[first + index]!;
    const toolCalls: unknown = (step as { toolCalls?: unknown } | null)?.toolCalls;
    if (!Array.isArray(toolCalls) || canonicalJson(step.message) !== canonicalJson(reply))
      refuse(`step ${index} does not hold the model reply it stands for`);
    const listed = toolCalls.map((call: { callId?: unknown } | null) => call?.callId);
    if (calls === undefined || index < steps.length - 1) {
      if (canonicalJson(listed) !== canonicalJson(toolUseIds(reply)))
        refuse(`step ${index} lists calls other than its model reply's`);
      continue;
    }
    const done = calls.filter((call) => call.status === "done");
    const same =
      toolCalls.length === done.length &&
      done.every((call, position) => {
        const entry = toolCalls[position] as Record<string, unknown>;
        return (
          entry.callId === call.id &&
          canonicalJson([entry.name, entry.input, entry.result, entry.preliminaryResults]) ===
            canonicalJson([call.name, call.input, call.result, call.preliminaryResults])
        );
      });
    if (!same) refuse("the last step's finished calls differ from the paused batch's");
  }
}

/** A finished call's stored result must be a result, and its block must answer it as it says. */
function checkDoneCall(call: Extract<PausedCall, { status: "done" }>): void {
  const result: unknown = call.result;
  const block = call.block as unknown as Record<string, unknown> | null;
  const content = (result as { content?: unknown } | null)?.content;
  const isError = (result as { isError?: unknown } | null)?.isError === true;
  const answers =
    typeof block === "object" &&
    block !== null &&
    block.type === "tool_result" &&
    block.tool_use_id === call.id &&
    (block.is_error === true) === isError &&
    call.isError === isError;
  if (
    typeof result !== "object" ||
    result === null ||
    !(typeof content === "string" || Array.isArray(content)) ||
    !answers
  )
    refuse(
      `the finished call "${call.id}" has no valid result, or no tool_result block that answers it`,
    );
}

function blocksOf(message: Message, index: number): ContentBlock[] {
  const role: unknown = (message as { role?: unknown } | null)?.role;
  const content: unknown = (message as { content?: unknown } | null)?.content;
  if (
    (role !== "user" && role !== "assistant") ||
    !(typeof content === "string" || Array.isArray(content))
  )
    refuse(`message ${index} is not a user or assistant message with content`);
  if (typeof content === "string") return [];
  for (const block of content as unknown[])
    if (typeof block !== "object" || block === null)
      refuse(`message ${index} holds a content block that is not an object`);
  return content as ContentBlock[];
}

function toolUseIds(message: Message): string[] {
  if (typeof message.content === "string") return [];
  return message.content.flatMap((block) => (block.type === "tool_use" ? [block.id] : []));
}

function batchCalls(calls: unknown): PausedCall[] {
  if (!Array.isArray(calls) || calls.length === 0) refuse("the paused batch has no list of calls");
  for (const call of calls) {
    const { id, name } = (call ?? {}) as { id?: unknown; name?: unknown };
    if (typeof id !== "string" || typeof name !== "string")
      refuse("a call of the paused batch has no string id and name");
  }
  return calls as PausedCall[];
}

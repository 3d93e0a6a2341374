// How a run with `output` ends: a reply without tool calls, or a batch whose results end the run,
// is the answer only when it passes the schema; otherwise it is an invalid answer (another try
// within `outputRetries`, then the run fails with OutputValidationError).

import { type Message, textOf } from "../core/messages.ts";
import type { Model } from "../model/model.ts";
import type { CallRecord } from "./call.ts";
import type { RunContext, TurnOutcome } from "./loop.ts";
import { checkTextAnswer, describeIssues, FINAL_OUTPUT } from "./output.ts";

export type Answer =
  | { ok: true; text: string; value: unknown }
  /** `tell`: the errors go to the model as a user message (they are not a call's result already). */
  | { ok: false; errors: string; tell?: boolean };

/** A reply without tool calls: the run's final text, or with `output` its answer checked. */
export async function finalReply(
  run: RunContext,
  model: Model | undefined,
  message: Message,
): Promise<TurnOutcome> {
  if (!run.config.output) return { kind: "final", result: textOf(message.content) };
  return answerOutcome(run, await checkAnswer(run, model, message));
}

async function checkAnswer(
  run: RunContext,
  model: Model | undefined,
  message: Message,
): Promise<Answer> {
  const output = run.config.output!;
  const text = textOf(message.content);
  if (model?.structuredOutputs !== true)
    return {
      ok: false,
      errors: `Your reply has no call to ${FINAL_OUTPUT}: give your final answer by calling the ${FINAL_OUTPUT} tool with it.`,
      tell: true,
    };
  const checked = await checkTextAnswer(output, text);
  return checked.ok
    ? { ok: true, text, value: checked.value }
    : { ok: false, errors: checked.errors, tell: true };
}

/**
 * With `output`, what a complete batch means. An accepted `final_output` call is the answer. A
 * result that ends the run otherwise (`endTurn`, an `afterToolCall` stop, every result
 * `terminate`) ends it only with a `structuredResult` that passes the schema; without one, or
 * with one the schema refuses, it is an invalid answer. A refused `final_output` call is one too.
 */
export async function batchAnswer(run: RunContext, records: CallRecord[]): Promise<TurnOutcome> {
  const output = run.config.output!;
  const result = (record: CallRecord) => record.result!;
  const accepted = records.find(
    (record) => record.tool === output.tool && result(record).endTurn === true,
  );
  if (accepted) {
    const value = result(accepted).structuredResult;
    return { kind: "final", result: JSON.stringify(value), structuredResult: value };
  }
  const ending =
    records.find((record) => result(record).endTurn === true) ??
    records.find((record) => record.stop === true) ??
    (records.every((record) => result(record).terminate === true)
      ? (records.find((record) => result(record).structuredResult !== undefined) ?? records[0])
      : undefined);
  if (ending) return answerOutcome(run, await endingAnswer(run, ending));
  const refused = records.find(
    (record) => record.name === FINAL_OUTPUT && result(record).isError === true,
  );
  if (refused) return answerOutcome(run, { ok: false, errors: textOf(result(refused).content) });
  return { kind: "continue" };
}

/** The `structuredResult` of a call that ended the run, checked against the schema. */
async function endingAnswer(run: RunContext, record: CallRecord): Promise<Answer> {
  const value = record.result!.structuredResult;
  const how = run.offered?.has(FINAL_OUTPUT)
    ? `Give your final answer by calling the ${FINAL_OUTPUT} tool.`
    : "Give your final answer as the output schema asks.";
  if (value === undefined)
    return {
      ok: false,
      errors: `The call to ${record.name} ended your turn without a final answer for the output schema. ${how}`,
      tell: true,
    };
  const outcome = await run.config.output!.schema.validate(value);
  if (outcome.ok) return { ok: true, text: JSON.stringify(outcome.value), value: outcome.value };
  return {
    ok: false,
    errors: `The call to ${record.name} ended your turn with an answer the output schema refuses. ${how}\n${describeIssues(value, outcome.issues)}`,
    tell: true,
  };
}

/**
 * What an answer means for the run: accepted, another try (the errors go to the model, logged
 * before the call that sees them; they were the call's error result already when the answer was
 * a `final_output` call), or, past `outputRetries`, the run fails with the last errors.
 */
async function answerOutcome(run: RunContext, answer: Answer): Promise<TurnOutcome> {
  if (answer.ok) return { kind: "final", result: answer.text, structuredResult: answer.value };
  run.outputAttempts++;
  if (run.outputAttempts > run.config.output!.retries)
    return {
      kind: "failed",
      error: {
        name: "OutputValidationError",
        message: `The model's answer did not match the output schema after ${run.outputAttempts} tries (outputRetries ${run.config.output!.retries}). Last errors: ${answer.errors}`,
      },
    };
  if (answer.tell) {
    const message: Message = { role: "user", content: answer.errors };
    run.messages.push(message);
    await run.journal?.userMessage(message);
  }
  return { kind: "continue" };
}

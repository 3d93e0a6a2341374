// A reply without tool calls, when the agent has `output`: the answer, or why it is not one.

import { type Message, textOf } from "../model/messages.ts";
import type { Model } from "../model/model.ts";
import type { RunContext, TurnOutcome } from "./loop.ts";
import { checkTextAnswer, FINAL_OUTPUT } from "./output.ts";

export type Answer =
  | { ok: true; text: string; value: unknown }
  /** `tell`: the errors go to the model as a user message (they are not a call's result already). */
  | { ok: false; errors: string; tell?: boolean };

export async function checkAnswer(
  run: RunContext,
  model: Model,
  message: Message,
): Promise<Answer> {
  const output = run.config.output!;
  const text = textOf(message.content);
  if (model.structuredOutputs !== true)
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
 * What an answer means for the run: accepted, another try (the errors go to the model; they were
 * the call's error result already when the answer was a `final_output` call), or, past
 * `outputRetries`, the run fails with the last errors.
 */
export function answerOutcome(run: RunContext, answer: Answer): TurnOutcome {
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
  if (answer.tell) run.messages.push({ role: "user", content: answer.errors });
  return { kind: "continue" };
}

// A reply without tool calls, when the agent has `output`: the answer, or why it is not one.

import { type Message, textOf } from "../model/messages.ts";
import type { Model } from "../model/model.ts";
import type { RunContext } from "./loop.ts";
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

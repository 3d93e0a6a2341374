import type { MockErrorSpec } from "./types.ts";

/** Google's documented signature for a function call the model did not make. */
const SKIP_SIGNATURE = "skip_thought_signature_validator";

/** The signature each function call part was given, by `callKey`. */
export type IssuedSignatures = Map<string, string>;

/** A call by the model turn it came in (counted from 0), its name and its arguments. */
export function callKey(turn: number, name: string, args: unknown): string {
  return `${turn}\u0000${name}\u0000${JSON.stringify(args ?? {})}`;
}

/**
 * What the Gemini API answers 400 to, with its own message texts: no `contents`, a content
 * without parts or with a role other than `user` / `model`, a turn of function responses whose
 * count differs from the calls of the model turn before it, a function call sent back without
 * the `thoughtSignature` it was given (or with another one), on a Gemini 3 model (or later) a
 * step of the current turn (the model turns since the last user turn that is not only function
 * responses) whose first function call has no `thoughtSignature` at all (a call the model did
 * not make needs the documented `skip_thought_signature_validator`; on a call this server signed,
 * the mock refuses that placeholder, where the API would take it), a `thinkingConfig` with
 * both a level and a budget, `temperature` outside 0..2, and a forced function the request does
 * not declare. Undefined when the request is fine.
 */
export function geminiRequestProblem(
  body: any,
  issued: IssuedSignatures,
  model?: string,
): MockErrorSpec | undefined {
  const contents = body?.contents;
  if (!Array.isArray(contents) || contents.length === 0)
    return invalid("* GenerateContentRequest.contents: contents is not specified");
  let turn = 0;
  for (let index = 0; index < contents.length; index++) {
    const content = contents[index];
    const parts = content?.parts;
    if (content?.role !== "user" && content?.role !== "model")
      return invalid(
        `Please use a valid role: user, model. (contents[${index}].role is ${JSON.stringify(content?.role)})`,
      );
    if (!Array.isArray(parts) || parts.length === 0)
      return invalid(
        `* GenerateContentRequest.contents[${index}].parts: contents.parts must not be empty.`,
      );
    if (content.role === "model") {
      const problem = signatureProblem(parts, turn, issued);
      if (problem) return problem;
      turn++;
      const calls = parts.filter((part: any) => part?.functionCall).length;
      const next = contents[index + 1];
      const responses = Array.isArray(next?.parts)
        ? next.parts.filter((part: any) => part?.functionResponse).length
        : 0;
      if (calls > 0 && next && responses !== calls)
        return invalid(
          "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        );
    }
  }
  if (validatesSignatures(model)) {
    const problem = currentTurnProblem(contents);
    if (problem) return problem;
  }
  return settingsProblem(body);
}

/** Gemini 3 and later refuse unsigned calls in the current turn; earlier models take them. */
function validatesSignatures(model: string | undefined): boolean {
  const major = /(?:^|\/)gemini-(\d+)/.exec(model ?? "")?.[1];
  return major !== undefined && Number(major) >= 3;
}

/** Each step (model turn) since the last user input: its first function call carries a signature. */
function currentTurnProblem(contents: any[]): MockErrorSpec | undefined {
  let start = 0;
  contents.forEach((content, index) => {
    const input =
      content.role === "user" && content.parts.some((part: any) => !part?.functionResponse);
    if (input) start = index + 1;
  });
  for (const content of contents.slice(start)) {
    if (content.role !== "model") continue;
    const first = content.parts.find((part: any) => part?.functionCall);
    if (first && first.thoughtSignature === undefined)
      return missingSignature(first.functionCall.name, 1);
  }
  return undefined;
}

function missingSignature(name: string, position: number): MockErrorSpec {
  return invalid(
    `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${position}. Please refer to the thought signatures documentation for more details.`,
  );
}

function signatureProblem(
  parts: any[],
  turn: number,
  issued: IssuedSignatures,
): MockErrorSpec | undefined {
  let position = 0;
  for (const part of parts) {
    const call = part?.functionCall;
    if (!call) continue;
    position++;
    const given = issued.get(callKey(turn, call.name, call.args));
    if (given === undefined) continue;
    if (part.thoughtSignature === undefined) return missingSignature(call.name, position);
    // Stricter than the API, which takes the placeholder anywhere (reasoning from scratch): a
    // client must send back the signature it was given, so the mock refuses it on a signed call.
    if (part.thoughtSignature === SKIP_SIGNATURE)
      return invalid(
        `mockServer: function call \`${call.name}\` was given a thought signature and came back with the ${SKIP_SIGNATURE} placeholder instead. Send back the signature it was given.`,
      );
    if (part.thoughtSignature !== given) return invalid("Corrupted thought signature.");
  }
  return undefined;
}

function settingsProblem(body: any): MockErrorSpec | undefined {
  const config = body.generationConfig ?? {};
  const thinking = config.thinkingConfig;
  if (thinking?.thinkingLevel !== undefined && thinking?.thinkingBudget !== undefined)
    return invalid(
      "You cannot use both thinking_level and the legacy thinking_budget parameter in the same request.",
    );
  const temperature = config.temperature;
  if (
    temperature !== undefined &&
    (typeof temperature !== "number" || temperature < 0 || temperature > 2)
  )
    return invalid(
      `* GenerateContentRequest.generation_config.temperature: temperature must be between 0 and 2 (got ${String(temperature)})`,
    );
  const allowed = body.toolConfig?.functionCallingConfig?.allowedFunctionNames;
  if (Array.isArray(allowed)) {
    const declared = new Set<string>();
    for (const tool of Array.isArray(body.tools) ? body.tools : [])
      for (const fn of tool?.functionDeclarations ?? []) declared.add(fn?.name);
    const unknown = allowed.find((name: unknown) => !declared.has(name as string));
    if (unknown !== undefined)
      return invalid(
        `* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: ${String(unknown)} is not a declared function.`,
      );
  }
  return undefined;
}

function invalid(message: string): MockErrorSpec {
  return { type: "INVALID_ARGUMENT", message };
}

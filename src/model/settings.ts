/**
 * Model settings at the protocol edge (design/interactive.md, "Model settings and transport"):
 * what both providers refuse before any request is sent. The wire fields themselves are set by
 * each provider, next to the rest of its request body.
 */
import { ConfigurationError } from "../core/errors.ts";
import type { ModelRequest } from "./model.ts";

export type RequestSettings = NonNullable<ModelRequest["settings"]>;
export type ToolChoice = NonNullable<RequestSettings["toolChoice"]>;

/** Who refuses, for the messages: the factory's prefix and the API's name. */
export interface Refuser {
  /** `anthropic()` / `openai()`. */
  prefix: string;
  /** `the Anthropic Messages API` / `the OpenAI Chat Completions API`. */
  api: string;
}

/** A refusal: a `ConfigurationError` naming the protocol, the setting and the limit. */
export function refuse(who: Refuser, text: string): ConfigurationError {
  return new ConfigurationError(`${who.prefix}: ${text}`);
}

/**
 * The call's tool choice, checked against its tools: `"required"` (normalised to `"any"` by the
 * engine, and here too for a caller of `stream()`) and a named tool need a tool to call, and a
 * named one must be among the request's tools (both APIs answer 400 otherwise). Undefined when
 * there is nothing to send: no choice, or `"auto"` / `"none"` with no tools (both APIs refuse
 * `tool_choice` without `tools`, and without tools there is nothing to choose).
 */
export function toolChoiceOf(who: Refuser, request: ModelRequest): ToolChoice | undefined {
  const given = request.settings?.toolChoice as ToolChoice | "required" | undefined;
  if (given === undefined) return undefined;
  const choice: ToolChoice = given === "required" ? "any" : given;
  const names = request.tools.map((tool) => tool.name);
  if (typeof choice === "object") {
    if (!names.includes(choice.name)) {
      const carried = names.length
        ? `this call's tools are ${names.map((name) => `"${name}"`).join(", ")}`
        : "this call has no tools";
      throw refuse(
        who,
        `modelSettings.toolChoice names the tool "${choice.name}", which is not among the tools of this call (${carried}); ${who.api} can only be made to call a tool the request carries.`,
      );
    }
    return choice;
  }
  if (names.length === 0) {
    if (choice === "any") {
      throw refuse(
        who,
        `modelSettings.toolChoice "any" makes the model call a tool, but this call has no tools; ${who.api} takes a tool choice only with tools.`,
      );
    }
    return undefined;
  }
  return choice;
}

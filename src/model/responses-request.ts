// The OpenAI Responses API's request (design/models.md, "OpenAI Responses"): skein's transcript as
// `input` items, stateless (`store: false`, every request carries the whole transcript, the
// reasoning items included, encrypted).

import type {
  ContentBlock,
  ImageBlock,
  Message,
  ProviderData,
  ToolResultBlock,
} from "../core/messages.ts";
import type { ModelRequest, ModelToolSpec } from "./model.ts";
import { strictSchema } from "./openai-strict.ts";
import { refuseReasoning } from "./reasoning.ts";
import { type Refuser, refuse, toolChoiceOf } from "./settings.ts";

/** The protocol name a Responses provider writes on the data it keeps for replay. */
export const RESPONSES_PROTOCOL = "openai-responses";

export const RESPONSES: Refuser = { prefix: "openai()", api: "the OpenAI Responses API" };

/** A block's provider data when it came from the Responses API at `origin`, else undefined. */
export function ownData(data: ProviderData | undefined, origin: string): ProviderData | undefined {
  return data && data.wire === RESPONSES_PROTOCOL && data.origin === origin ? data : undefined;
}

/**
 * The transcript as `input` items, in order. A `reasoning` block from this protocol and host is
 * sent back as the item it was received as, in its place; another provider's is dropped, as is
 * thinking text (the Responses API takes no reasoning it did not make).
 */
export function responsesInput(messages: readonly Message[], origin: string): unknown[] {
  const input: unknown[] = [];
  for (const message of messages) {
    if (typeof message.content === "string") {
      input.push(
        message.role === "user"
          ? { role: "user", content: [{ type: "input_text", text: message.content }] }
          : assistantText(message.content),
      );
      continue;
    }
    if (message.role === "assistant") appendAssistant(input, message.content, origin);
    else appendUser(input, message.content);
  }
  return input;
}

function assistantText(text: string): unknown {
  return { role: "assistant", content: [{ type: "output_text", text }] };
}

function appendAssistant(input: unknown[], blocks: readonly ContentBlock[], origin: string): void {
  for (const block of blocks) {
    if (block.type === "reasoning") {
      const item = ownData(block.providerData, origin)?.item;
      if (item) input.push(item);
    } else if (block.type === "text") {
      if (block.text !== "") input.push(assistantText(block.text));
    } else if (block.type === "tool_use") {
      const id = ownData(block.providerData, origin)?.itemId;
      input.push({
        type: "function_call",
        ...(typeof id === "string" ? { id } : {}),
        call_id: block.id,
        name: block.name,
        arguments: JSON.stringify(block.input ?? {}),
      });
    }
  }
}

function appendUser(input: unknown[], blocks: readonly ContentBlock[]): void {
  let parts: unknown[] = [];
  const flush = () => {
    if (parts.length) input.push({ role: "user", content: parts });
    parts = [];
  };
  for (const block of blocks) {
    if (block.type === "tool_result") {
      flush();
      input.push(callOutput(block));
    } else if (block.type === "text") parts.push({ type: "input_text", text: block.text });
    else if (block.type === "image") parts.push(inputImage(block));
  }
  flush();
}

/** A result as `function_call_output`: text as a string; with images, a list of input parts. */
function callOutput(block: ToolResultBlock): unknown {
  const prefix = block.is_error ? "Error: " : "";
  if (typeof block.content === "string")
    return {
      type: "function_call_output",
      call_id: block.tool_use_id,
      output: prefix + block.content,
    };
  const hasImage = block.content.some((part) => part.type === "image");
  if (!hasImage) {
    const text = block.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
    return { type: "function_call_output", call_id: block.tool_use_id, output: prefix + text };
  }
  const output = block.content.map((part) =>
    part.type === "text" ? { type: "input_text", text: part.text } : inputImage(part),
  );
  if (prefix) output.unshift({ type: "input_text", text: prefix.trim() });
  return { type: "function_call_output", call_id: block.tool_use_id, output };
}

function inputImage(block: ImageBlock): unknown {
  const url =
    block.source.type === "url"
      ? block.source.url
      : `data:${block.source.media_type};base64,${block.source.data}`;
  return { type: "input_image", image_url: url, detail: "auto" };
}

/** The tools as Responses function tools; `strict` is sent either way (the API's default is on). */
export function responsesTools(tools: readonly ModelToolSpec[], strict: boolean): unknown[] {
  const wire: unknown[] = [];
  for (const tool of tools) {
    let entry = strict ? undefined : wired.get(tool);
    if (
      !entry ||
      entry.name !== tool.name ||
      entry.description !== tool.description ||
      entry.parameters !== tool.input_schema
    ) {
      entry = {
        type: "function",
        name: tool.name,
        description: tool.description,
        parameters: strict ? strictSchema(tool.input_schema) : tool.input_schema,
        strict,
      };
      if (!strict) wired.set(tool, entry);
    }
    wire.push(entry);
  }
  return wire;
}

type WireTool = {
  type: "function";
  name: string;
  description: string;
  parameters: unknown;
  strict: boolean;
};

const wired = new WeakMap<ModelToolSpec, WireTool>();

/**
 * The call's settings as Responses fields, after the refusals that need no request: stop
 * sequences (the API has none), `reasoning.budgetTokens` (it takes an effort), a tool choice the
 * call's tools cannot satisfy.
 */
export function applyResponsesSettings(body: Record<string, unknown>, request: ModelRequest): void {
  const settings = request.settings;
  if (!settings) return;
  if (settings.temperature !== undefined) body.temperature = settings.temperature;
  if (settings.topP !== undefined) body.top_p = settings.topP;
  if (settings.stopSequences?.length)
    throw refuse(
      RESPONSES,
      `modelSettings.stopSequences cannot be sent: ${RESPONSES.api} has no stop sequences. Leave them out, or use openai({ api: "chat" }) with a model that takes them.`,
    );
  const reasoning = settings.reasoning;
  if (reasoning) {
    refuseReasoning(
      RESPONSES,
      reasoning,
      ["budgetTokens"],
      "The Responses API takes an effort, not a budget: give reasoning.effort instead.",
    );
    const wire: Record<string, unknown> = {};
    if (reasoning.effort !== undefined) wire.effort = reasoning.effort;
    if (reasoning.summary !== undefined) wire.summary = reasoning.summary;
    if (Object.keys(wire).length) body.reasoning = wire;
  }
  const choice = toolChoiceOf(RESPONSES, request);
  if (choice === undefined) return;
  body.tool_choice =
    typeof choice === "object"
      ? { type: "function", name: choice.name }
      : choice === "any"
        ? "required"
        : choice;
}

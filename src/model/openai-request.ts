import type { ContentBlock, Message, ToolResultBlock } from "../core/messages.ts";
import type { ModelToolSpec } from "./model.ts";
import { strictSchema } from "./openai-strict.ts";

/**
 * The tools in chat-completions form. An agent sends the same tool specs on every call of every
 * run: without strict mode, each is converted once (and again only if one of its fields was
 * replaced; the wire form holds the schema itself, not a copy).
 */
export function wireTools(tools: readonly ModelToolSpec[], strict: boolean): unknown[] {
  if (strict) return tools.map((tool) => wireTool(tool, true));
  const wire: unknown[] = [];
  for (const tool of tools) {
    let entry = wired.get(tool);
    const fn = entry?.function;
    if (
      !entry ||
      fn!.name !== tool.name ||
      fn!.description !== tool.description ||
      fn!.parameters !== tool.input_schema
    ) {
      entry = wireTool(tool, false);
      wired.set(tool, entry);
    }
    wire.push(entry);
  }
  return wire;
}

type WireTool = {
  type: "function";
  function: { name: string; description: string; parameters: unknown; strict?: true };
};

const wired = new WeakMap<ModelToolSpec, WireTool>();

export function wireTool(tool: ModelToolSpec, strict: boolean): WireTool {
  return {
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: strict ? strictSchema(tool.input_schema) : tool.input_schema,
      ...(strict ? { strict: true } : {}),
    },
  };
}

/** The Anthropic-shaped transcript in chat-completions form: tool results become `tool` messages. */
export function wireMessages(system: string, messages: Message[], context: WireContext): unknown[] {
  const wire: unknown[] = system ? [{ role: "system", content: system }] : [];
  if (messages.length < CACHE_FROM) {
    // A short transcript is converted afresh: cheaper than keeping its conversion, which would
    // live (and be copied by the collector) as long as the run.
    for (const message of messages) appendWire(wire, message, context);
    return wire;
  }
  const cache = cacheFor(context);
  for (const message of messages) {
    // Transcript messages never change once appended: each is converted once, not on every turn.
    let converted = cache.get(message);
    if (!converted) {
      converted = [];
      appendWire(converted, message, context);
      cache.set(message, converted);
    }
    for (const entry of converted) wire.push(entry);
  }
  return wire;
}

/** From this many messages on, each message's conversion is kept for the next turns. */
const CACHE_FROM = 16;

/** How a message is converted: thinking sent back or not, and the origin whose `extra_content` goes back. */
export interface WireContext {
  replayReasoning: boolean;
  origin: string;
}

/** The conversions for one way of converting (messages are shared between agents and providers). */
const caches = new Map<string, WeakMap<Message, unknown[]>>();

function cacheFor(context: WireContext): WeakMap<Message, unknown[]> {
  const key = `${context.replayReasoning ? "r" : "-"}${context.origin}`;
  let cache = caches.get(key);
  if (!cache) {
    cache = new WeakMap();
    // A process talks to a few servers; a bound keeps a hostile number of origins from growing it.
    if (caches.size < 64) caches.set(key, cache);
  }
  return cache;
}

/** One transcript message in chat-completions form, added to `wire`: one message, or a user message's tool results as `tool` messages. */
function appendWire(wire: unknown[], message: Message, context: WireContext): void {
  if (typeof message.content === "string") {
    wire.push({ role: message.role, content: message.content });
    return;
  }
  if (message.role === "assistant") {
    wire.push(assistantMessage(message.content, context));
    return;
  }
  const parts: unknown[] = [];
  for (const block of message.content) {
    if (block.type === "tool_result") wire.push(toolMessage(block));
    else if (block.type === "text") parts.push({ type: "text", text: block.text });
    else if (block.type === "image")
      parts.push({ type: "image_url", image_url: { url: imageUrl(block) } });
  }
  // Text alone goes as a string: some servers (DeepSeek) refuse an array of text parts.
  if (parts.length) {
    const allText = parts.every((part) => (part as { type: string }).type === "text");
    wire.push({
      role: "user",
      content: allText ? parts.map((part) => (part as { text: string }).text).join("\n") : parts,
    });
  }
}

function assistantMessage(blocks: ContentBlock[], context: WireContext): unknown {
  let text = "";
  let reasoning = "";
  const toolCalls: unknown[] = [];
  for (const block of blocks) {
    if (block.type === "text") text += block.text;
    else if (block.type === "thinking") reasoning += block.thinking;
    else if (block.type === "tool_use") {
      const data = block.providerData;
      // A call's extra_content goes back unchanged, to the origin that sent it only.
      const extra =
        data?.wire === "openai-chat" && data.origin === context.origin
          ? { extra_content: data.extraContent }
          : {};
      toolCalls.push({
        id: block.id,
        type: "function",
        function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
        ...extra,
      });
    }
  }
  const wire: Record<string, unknown> = { role: "assistant", content: text || null };
  if (context.replayReasoning && reasoning) wire.reasoning_content = reasoning;
  if (toolCalls.length) wire.tool_calls = toolCalls;
  return wire;
}

/** Tool messages carry text only; an image in a tool result is described, not dropped silently. */
function toolMessage(block: ToolResultBlock): unknown {
  const content =
    typeof block.content === "string"
      ? block.content
      : block.content
          .map((part) =>
            part.type === "text"
              ? part.text
              : "[image omitted: this API takes no images in tool results]",
          )
          .join("\n");
  return {
    role: "tool",
    tool_call_id: block.tool_use_id,
    content: block.is_error ? `Error: ${content}` : content,
  };
}

function imageUrl(block: Extract<ContentBlock, { type: "image" }>): string {
  return block.source.type === "url"
    ? block.source.url
    : `data:${block.source.media_type};base64,${block.source.data}`;
}

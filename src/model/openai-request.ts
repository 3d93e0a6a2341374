import type { ContentBlock, Message, ToolResultBlock } from "./messages.ts";
import type { ModelToolSpec } from "./model.ts";
import { strictSchema } from "./openai-strict.ts";

export function wireTool(tool: ModelToolSpec, strict: boolean): unknown {
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
export function wireMessages(
  system: string,
  messages: Message[],
  replayReasoning: boolean,
): unknown[] {
  const wire: unknown[] = system ? [{ role: "system", content: system }] : [];
  const cache = replayReasoning ? wireWithReasoning : wireWithoutReasoning;
  for (const message of messages) {
    // Transcript messages never change once appended: each is converted once, not on every turn.
    let converted = cache.get(message);
    if (!converted) {
      converted = wireMessage(message, replayReasoning);
      cache.set(message, converted);
    }
    for (const entry of converted) wire.push(entry);
  }
  return wire;
}

const wireWithReasoning = new WeakMap<Message, unknown[]>();
const wireWithoutReasoning = new WeakMap<Message, unknown[]>();

/** One transcript message in chat-completions form: one message, or a user message's tool results as `tool` messages. */
function wireMessage(message: Message, replayReasoning: boolean): unknown[] {
  if (typeof message.content === "string")
    return [{ role: message.role, content: message.content }];
  if (message.role === "assistant") return [assistantMessage(message.content, replayReasoning)];
  const wire: unknown[] = [];
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
  return wire;
}

function assistantMessage(blocks: ContentBlock[], replayReasoning: boolean): unknown {
  const text = blocks.map((block) => (block.type === "text" ? block.text : "")).join("");
  const reasoning = blocks
    .map((block) => (block.type === "thinking" ? block.thinking : ""))
    .join("");
  const toolCalls = blocks.flatMap((block) =>
    block.type === "tool_use"
      ? [
          {
            id: block.id,
            type: "function",
            function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
          },
        ]
      : [],
  );
  return {
    role: "assistant",
    content: text || null,
    ...(replayReasoning && reasoning ? { reasoning_content: reasoning } : {}),
    ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
  };
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

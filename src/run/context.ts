// Context management (design/interactive.md, "Context management"): an estimate of each request's
// size, and, when it passes the threshold, a compacted view of the transcript for that request.
// The transcript itself is never changed: results, steps, events and paused states keep it whole.

import { ContextWindowError } from "../core/errors.ts";
import type { ContentBlock, Message, ToolResultBlock, Usage } from "../core/messages.ts";
import { addUsage, textOf } from "../core/messages.ts";
import type { Model, ModelToolSpec } from "../model/model.ts";
import { type PriceTable, priced } from "../model/pricing.ts";
import { type ContextSettings, defaultWindow } from "./settings.ts";
import type { AgentEvent } from "./types.ts";

const SUMMARY_HEADER = "[Summary of the earlier conversation]";
const DEFAULT_INSTRUCTIONS =
  "Summarise the conversation so far for the assistant who will continue it. Keep every fact, decision, file path, command, result and open task it will need; leave out pleasantries. Write plain text.";

/** What one run remembers between requests, so compaction is stable and the estimate incremental. */
export interface ContextMemory {
  /**
   * Results replaced once stay replaced (a stable prefix for prompt caches): tool_use id ->
   * placeholder. Made with the first replacement.
   */
  removed?: Map<string, string>;
  /** The early conversation replaced by a summary: the first `covers` messages. */
  summary?: { covers: number; text: string };
  /** The last request's size as the provider reported it, and as characters. */
  last?: { tokens: number; chars: number };
  /** The size in characters of the request being made (for `last`, once the provider reports). */
  sending?: number;
  /** The transcript's size so far: its first `counted` messages hold `chars` characters. */
  transcript: { counted: number; chars: number };
}

/** A run's memory, empty. */
export function contextMemory(): ContextMemory {
  return { transcript: { counted: 0, chars: 0 } };
}

/**
 * The characters of the transcript's messages, counted once each: the transcript only grows, so
 * each turn adds only its new messages.
 */
function transcriptChars(memory: ContextMemory, transcript: Message[]): number {
  const counted = memory.transcript;
  if (counted.counted > transcript.length) return sumChars(transcript);
  for (let index = counted.counted; index < transcript.length; index++)
    counted.chars += jsonLength(transcript[index], 0);
  counted.counted = transcript.length;
  return counted.chars;
}

const sizes = new WeakMap<object, number>();

/**
 * About the JSON length of a value, once per object (messages are never mutated): the lengths of
 * its strings and keys plus a few characters of punctuation each, counted without building the
 * text (what the estimate needs, at a fraction of `JSON.stringify`'s cost on every turn).
 */
function charsOf(value: object): number {
  let size = sizes.get(value);
  if (size === undefined) {
    size = jsonLength(value, 0);
    sizes.set(value, size);
  }
  return size;
}

function jsonLength(value: unknown, depth: number): number {
  switch (typeof value) {
    case "string":
      return value.length + 2;
    case "number":
    case "boolean":
      return String(value).length;
    case "object": {
      if (value === null) return 4;
      // Deep values are rare in requests; past this depth, the exact length.
      if (depth > 32) return JSON.stringify(value)?.length ?? 0;
      let total = 2;
      if (Array.isArray(value)) {
        for (const item of value) total += jsonLength(item, depth + 1) + 1;
        return total;
      }
      for (const key in value) {
        const item = (value as Record<string, unknown>)[key];
        if (item === undefined || typeof item === "function") continue;
        total += key.length + 4 + jsonLength(item, depth + 1);
      }
      return total;
    }
    default:
      return 0;
  }
}

/** One token per 4 characters over what the provider last reported. */
function estimate(memory: ContextMemory, chars: number): number {
  if (!memory.last) return Math.ceil(chars / 4);
  return Math.max(0, Math.ceil(memory.last.tokens + (chars - memory.last.chars) / 4));
}

/** After a call: what the provider said the request cost, for the next estimate. */
export function rememberRequest(
  memory: ContextMemory | undefined,
  usage: Partial<Usage> | undefined,
): void {
  if (!memory || !usage || memory.sending === undefined) return;
  const tokens =
    (usage.inputTokens ?? 0) +
    (usage.cacheReadInputTokens ?? 0) +
    (usage.cacheCreationInputTokens ?? 0);
  if (tokens > 0) memory.last = { tokens, chars: memory.sending };
}

export type Compacted = { ok: true; messages: Message[] } | { ok: false; error: Error };

/**
 * The messages to send, compacted when the estimate passes `threshold × window`: old results
 * replaced by placeholders (oldest first, the newest results kept) down to `target × window`,
 * then, if still above the threshold and `summarize` is on, the early conversation summarised.
 */
export function compact(options: CompactOptions): Compacted | Promise<Compacted> {
  const { settings, memory, system, tools } = options;
  const window = settings.window ?? defaultWindow(options.model.modelId);
  const messages = applyMemory(memory, options.messages);
  // The common case, nothing compacted yet: the transcript's size, counted incrementally.
  const chars =
    system.length +
    charsOf(tools) +
    (messages === options.messages && options.transcript
      ? transcriptChars(memory, messages)
      : sumChars(messages));
  memory.sending = chars;
  const before = estimate(memory, chars);
  // Under the threshold (nearly every call): no await, nothing allocated.
  if (before <= settings.threshold * window) return { ok: true, messages };
  return compactOver(options, { window, messages, chars, before });
}

interface CompactOptions {
  settings: ContextSettings;
  memory: ContextMemory;
  model: Model;
  system: string;
  tools: readonly ModelToolSpec[];
  messages: Message[];
  turn: number;
  signal: AbortSignal;
  emit: (event: AgentEvent) => void;
  /** Usage of a summarising call is added here. */
  usage: Usage;
  /** The agent's prices, for the summarising call's cost. */
  pricing?: PriceTable | undefined;
  /** `messages` is the run's transcript itself (not a hook's replacement): counted incrementally. */
  transcript: boolean;
  /** The `preCompact` hooks: may veto this compaction or supply the summary. */
  preCompact?: (messages: Message[]) => Promise<{ veto: true } | { summary: string } | undefined>;
}

/** Over the threshold: placeholders, then perhaps a summary, then the window's last word. */
async function compactOver(
  options: CompactOptions,
  start: { window: number; messages: Message[]; chars: number; before: number },
): Promise<Compacted> {
  const { settings, memory, system, tools } = options;
  const { window, before } = start;
  const fixed = system.length + charsOf(tools);
  let { messages, chars } = start;
  if (options.preCompact) {
    let answer: Awaited<ReturnType<NonNullable<CompactOptions["preCompact"]>>>;
    try {
      answer = await options.preCompact(messages);
    } catch (error) {
      if (options.signal.aborted) throw error;
      return { ok: false, error: error as Error };
    }
    if (answer && "veto" in answer)
      return windowCheck(options, window, before, messages, chars, [], false);
    if (answer && "summary" in answer) {
      const covers = newestAssistantIndex(options.messages);
      if (covers > 0) {
        memory.summary = { covers, text: answer.summary };
        messages = applyMemory(memory, options.messages);
        chars = fixed + sumChars(messages);
        return windowCheck(options, window, before, messages, chars, [], true);
      }
    }
  }

  const removed: { callId: string; name: string; chars: number }[] = [];
  const names = toolNames(options.messages);
  const newest = newestResults(messages);
  const goal = settings.target * window;
  for (let index = 0; index < messages.length && estimate(memory, chars) > goal; index++) {
    if (index === newest) break;
    const message = messages[index]!;
    if (typeof message.content === "string" || !message.content.some(isResult)) continue;
    const content = message.content.map((block): ContentBlock => {
      if (!isResult(block) || memory.removed?.has(block.tool_use_id)) return block;
      const size = resultChars(block);
      const name = names.get(block.tool_use_id) ?? "a tool";
      const placeholder = `[skein: removed the result of ${name} (${size} characters) to fit the context window]`;
      if (size <= placeholder.length) return block;
      memory.removed ??= new Map();
      memory.removed.set(block.tool_use_id, placeholder);
      removed.push({ callId: block.tool_use_id, name, chars: size });
      return withPlaceholder(block, placeholder);
    });
    const replaced: Message = { ...message, content };
    chars += charsOf(replaced) - charsOf(message);
    messages = messages.with(index, replaced);
  }
  let summarized = false;
  if (estimate(memory, chars) > settings.threshold * window && settings.summarize) {
    const summary = await summarize(options, messages);
    if (summary) {
      messages = applyMemory(memory, options.messages);
      chars = fixed + sumChars(messages);
      summarized = true;
    }
  }
  return windowCheck(options, window, before, messages, chars, removed, summarized);
}

/** After compaction (or a hook's veto or summary): the event, and the window's last word. */
function windowCheck(
  options: CompactOptions,
  window: number,
  before: number,
  messages: Message[],
  chars: number,
  removed: { callId: string; name: string; chars: number }[],
  summarized: boolean,
): Compacted {
  const { memory, turn } = options;
  memory.sending = chars;
  const after = estimate(memory, chars);
  if (removed.length > 0 || summarized)
    options.emit({
      type: "compaction",
      turn,
      removed,
      summarized,
      estimateBefore: before,
      estimateAfter: after,
    });
  if (after > window)
    return {
      ok: false,
      error: new ContextWindowError(
        `The next request needs about ${after} tokens, more than the context window of ${window} tokens of ${options.model.modelId}, even with old tool results removed: the newest message is too large. Raise context.window if the model takes more, or send less at once.`,
      ),
    };
  return { ok: true, messages };
}

/** The transcript with what earlier compactions did: the summary, and the results removed. */
function applyMemory(memory: ContextMemory, transcript: Message[]): Message[] {
  let messages = transcript;
  if (memory.summary && memory.summary.covers <= transcript.length)
    messages = [
      { role: "user", content: `${SUMMARY_HEADER}\n${memory.summary.text}` },
      ...transcript.slice(memory.summary.covers),
    ];
  const removed = memory.removed;
  if (!removed?.size) return messages;
  return messages.map((message) => {
    if (typeof message.content === "string") return message;
    if (!message.content.some((block) => isResult(block) && removed.has(block.tool_use_id)))
      return message;
    return {
      ...message,
      content: message.content.map((block) =>
        isResult(block) && removed.has(block.tool_use_id)
          ? withPlaceholder(block, removed.get(block.tool_use_id)!)
          : block,
      ),
    };
  });
}

function newestAssistantIndex(transcript: Message[]): number {
  for (let index = transcript.length - 1; index >= 0; index--)
    if (transcript[index]!.role === "assistant") return index;
  return -1;
}

/** Replaces everything before the newest assistant message by a summary from one model call. */
async function summarize(options: CompactOptions, view: Message[]): Promise<boolean> {
  const { memory, settings } = options;
  const transcript = options.messages;
  let newestAssistant = -1;
  for (let index = transcript.length - 1; index >= 0; index--)
    if (transcript[index]!.role === "assistant") {
      newestAssistant = index;
      break;
    }
  if (newestAssistant <= 0) return false;
  const summarizeWith = settings.summarize === false ? {} : settings.summarize;
  const model = summarizeWith.model ?? options.model;
  // What is summarised is the view up to that message (earlier summary and placeholders included).
  const shift = transcript.length - view.length;
  const covered = view.slice(0, newestAssistant - shift);
  if (covered.length === 0) return false;
  let text = "";
  let usage: Partial<Usage> | undefined;
  const request = {
    system: summarizeWith.instructions ?? DEFAULT_INSTRUCTIONS,
    messages: [
      ...covered,
      {
        role: "user" as const,
        content: "Summarise the conversation above, as your instructions say.",
      },
    ],
    tools: [],
  };
  for await (const event of model.stream(mergeUserRuns(request), { signal: options.signal })) {
    if (event.type === "message") {
      text = textOf(event.message.content);
      usage = event.usage;
    }
  }
  addUsage(options.usage, priced(usage, model.modelId, options.pricing));
  if (!text) return false;
  memory.summary = { covers: newestAssistant, text };
  return true;
}

/** Consecutive user messages of a summary request merged (the covered view may end with one). */
function mergeUserRuns<T extends { messages: Message[] }>(request: T): T {
  const messages: Message[] = [];
  for (const message of request.messages) {
    const last = messages.at(-1);
    if (last?.role === "user" && message.role === "user")
      messages[messages.length - 1] = {
        role: "user",
        content: [...blocks(last.content), ...blocks(message.content)],
      };
    else messages.push(message);
  }
  return { ...request, messages };
}

function blocks(content: Message["content"]): ContentBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

function sumChars(messages: Message[]): number {
  let total = 0;
  for (const message of messages) total += charsOf(message);
  return total;
}

function isResult(block: ContentBlock): block is ToolResultBlock {
  return block.type === "tool_result";
}

function resultChars(block: ToolResultBlock): number {
  return typeof block.content === "string" ? block.content.length : charsOf(block.content);
}

function withPlaceholder(block: ToolResultBlock, placeholder: string): ToolResultBlock {
  const replaced: ToolResultBlock = { ...block, content: placeholder };
  return replaced;
}

/** Index of the newest message holding tool results (its results are never replaced). */
function newestResults(messages: Message[]): number {
  for (let index = messages.length - 1; index >= 0; index--) {
    const content = messages[index]!.content;
    if (typeof content !== "string" && content.some(isResult)) return index;
  }
  return -1;
}

function toolNames(messages: Message[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const message of messages) {
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    for (const block of message.content)
      if (block.type === "tool_use") names.set(block.id, block.name);
  }
  return names;
}

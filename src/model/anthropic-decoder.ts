import type { EventSourceMessage } from "eventsource-parser";
import {
  APIConnectionError,
  APIError,
  InternalServerError,
  OverloadedError,
  ProtocolError,
  RateLimitError,
} from "../core/errors.ts";
import type { ContentBlock, Usage } from "../core/messages.ts";
import type { IncompleteToolCall, ModelStreamEvent } from "./model.ts";
import { parseEventData, type StreamDecoder } from "./transport.ts";

/** Blocks whose input streams as `input_json_delta`, as the official client tracks them. */
const TOOL_LIKE = new Set(["tool_use", "server_tool_use", "mcp_tool_use"]);

/** A block as it streams: any type the API sends, kept whole for the next request. */
type StreamedBlock = ContentBlock & Record<string, unknown>;

/**
 * Reads Anthropic's SSE events (message_start ... message_stop) into model stream events. Every
 * block is kept as the API sent it (server tool calls and their results, citations, redacted
 * thinking), so the next request replays the turn as it was; only `tool_use` blocks are ours to run.
 */
export class AnthropicDecoder implements StreamDecoder {
  #content: StreamedBlock[] = [];
  #json = new Map<number, string>();
  #usage: Partial<Usage> = {};
  #stopReason = "";
  #incomplete: IncompleteToolCall[] = [];
  #started = false;
  #finished = false;
  /** Blocks that got their content_block_stop; a tool_use block without one was cut short. */
  #stopped = new Set<number>();
  /** Announce complete tool calls as they finish (eager execution), until one is cut short. */
  #announce = true;

  isComplete(): boolean {
    return this.#finished;
  }

  isKeepAlive(event: EventSourceMessage): boolean {
    return event.event === "ping";
  }

  push(event: EventSourceMessage, out: ModelStreamEvent[]): void {
    if (event.event === "ping") return;
    const data = parseEventData(event.data);
    const type = event.event ?? (data.type as string | undefined);
    switch (type) {
      case "message_start": {
        this.#started = true;
        const usage = (data.message as { usage?: Record<string, unknown> } | undefined)?.usage;
        this.#usage = {
          inputTokens: 0,
          outputTokens: 0,
          cacheReadInputTokens: 0,
          cacheCreationInputTokens: 0,
        };
        this.#takeUsage(usage);
        return;
      }
      case "content_block_start":
        this.#startBlock(data.index as number, data.content_block as StreamedBlock);
        return;
      case "content_block_delta": {
        const passed = this.#delta(data.index as number, data.delta as Record<string, unknown>);
        if (passed) out.push(passed);
        return;
      }
      case "content_block_stop": {
        const passed = this.#stopBlock(data.index as number);
        if (passed) out.push(passed);
        return;
      }
      case "message_delta": {
        const delta = data.delta as { stop_reason?: string } | undefined;
        if (delta?.stop_reason) this.#stopReason = delta.stop_reason;
        // Its usage is the whole message's total: each counter it carries replaces message_start's.
        this.#takeUsage(data.usage as Record<string, unknown> | undefined);
        return;
      }
      case "message_stop":
        this.#finished = true;
        out.push(this.#finalMessage());
        return;
      case "error": {
        const error = (data.error ?? {}) as { type?: string; message?: string };
        throw streamError(
          error.type ?? "api_error",
          error.message ?? "the stream reported an error",
        );
      }
      default:
        return; // Unknown event types are for newer API versions; skipping them is what the official clients do.
    }
  }

  end(_out: ModelStreamEvent[]): void {
    if (!this.#finished) {
      throw new APIConnectionError(
        this.#started
          ? "The model's stream ended before message_stop: the turn is incomplete."
          : "The model's stream ended before it began.",
      );
    }
    // The final message came with message_stop: nothing closes the turn after it.
  }

  /** Counters the API omits (or sends as null) keep their value, as in the official client. */
  #takeUsage(usage: Record<string, unknown> | undefined): void {
    if (!usage) return;
    const take = (field: keyof Usage, name: string) => {
      const value = usage[name];
      if (typeof value === "number" && Number.isFinite(value)) this.#usage[field] = value;
    };
    take("inputTokens", "input_tokens");
    take("outputTokens", "output_tokens");
    take("cacheReadInputTokens", "cache_read_input_tokens");
    take("cacheCreationInputTokens", "cache_creation_input_tokens");
  }

  #startBlock(index: number, started: StreamedBlock | undefined): void {
    // A hostile index must not make us allocate or walk a huge array.
    if (
      !started ||
      typeof started !== "object" ||
      !Number.isInteger(index) ||
      index < 0 ||
      index > this.#content.length + 16
    ) {
      throw new ProtocolError(
        `content_block_start with an unusable index (${String(index)}) or no block.`,
      );
    }
    // Breakpoints are the client's to set: one a server sent would count against the request's four.
    // (Each branch below copies the block: only one with a breakpoint needs a copy without it.)
    const block = "cache_control" in started ? withoutBreakpoint(started) : started;
    if (TOOL_LIKE.has(block.type)) {
      // The input arrives as deltas; some blocks (and some compatible servers) send it whole here.
      this.#content[index] = { ...block, input: (block as { input?: unknown }).input ?? {} };
      this.#json.set(index, "");
    } else if (block.type === "text") {
      const text: StreamedBlock = { ...block, text: block.text ?? "" };
      if (Array.isArray(block.citations)) text.citations = [...block.citations];
      this.#content[index] = text;
    } else if (block.type === "thinking") {
      this.#content[index] = { ...block, thinking: block.thinking ?? "", signature: "" };
    } else this.#content[index] = { ...block };
  }

  /** Reads one delta; returns the event it passes on, if any. */
  #delta(index: number, delta: Record<string, unknown>): ModelStreamEvent | undefined {
    const block = this.#content[index];
    if (!block)
      throw new ProtocolError(`content_block_delta for block ${index}, which was never started.`);
    switch (delta.type) {
      case "text_delta":
        if (block.type === "text") block.text += String(delta.text);
        return { type: "text_delta", text: String(delta.text) };
      case "citations_delta":
        if (block.type === "text") {
          const citations = Array.isArray(block.citations) ? block.citations : [];
          block.citations = [...citations, delta.citation];
        }
        return undefined;
      case "thinking_delta":
        if (block.type === "thinking") block.thinking += String(delta.thinking);
        return { type: "thinking_delta", thinking: String(delta.thinking) };
      case "signature_delta":
        if (block.type === "thinking")
          block.signature = (block.signature ?? "") + String(delta.signature);
        return undefined;
      case "input_json_delta": {
        if (!this.#json.has(index)) return undefined;
        const fragment = String(delta.partial_json ?? "");
        this.#json.set(index, this.#json.get(index) + fragment);
        // Streamed input only for the calls that will be ours to run (a `tool_call` follows, or an
        // incomplete call): server_tool_use and mcp_tool_use blocks run on the API's side, get no
        // `tool_call`, and their input is shown with the final message. The API opens each block
        // with an empty fragment: only non-empty ones are passed on.
        if (block.type !== "tool_use" || fragment === "" || this.#stopped.has(index))
          return undefined;
        return { type: "tool_input_delta", id: block.id, name: block.name, delta: fragment };
      }
      default:
        return undefined;
    }
  }

  /** Closes a block; returns the tool_call it completes, if any. */
  #stopBlock(index: number): ModelStreamEvent | undefined {
    this.#stopped.add(index);
    const block = this.#content[index];
    if (!block || !this.#json.has(index)) return undefined;
    const raw = this.#json.get(index) ?? "";
    let reason: string | undefined;
    try {
      if (raw.trim() !== "") block.input = JSON.parse(raw);
      const input = block.input;
      if (typeof input !== "object" || input === null || Array.isArray(input)) {
        reason = "its input was not a JSON object";
        block.input = {};
      }
    } catch {
      reason = "its input was not valid JSON";
      block.input = {};
    }
    // Server and MCP tools ran on the API's side: kept for the replay, never ours to run.
    if (block.type !== "tool_use") return undefined;
    if (reason) {
      this.#incomplete.push({ id: block.id, name: block.name, reason });
      // Later calls must not be announced early: they would overtake this one.
      this.#announce = false;
      return undefined;
    }
    // Input that parses is complete (a cut would leave it unparseable): announce it now, so
    // eager execution can start it while the reply goes on.
    return this.#announce
      ? { type: "tool_call", id: block.id, name: block.name, input: block.input }
      : undefined;
  }

  #finalMessage(): ModelStreamEvent {
    const blocks = this.#content;
    // A max_tokens stop is why the last tool call's input did not parse: say so.
    if (this.#stopReason === "max_tokens") {
      let last: StreamedBlock | undefined;
      for (const block of blocks) if (block?.type === "tool_use") last = block;
      const cut = last && this.#incomplete.find((call) => call.id === last.id);
      if (cut) cut.reason = "the reply hit max_tokens while writing it";
    }
    // Empty text blocks are dropped (the API refuses them when sent back); so is an empty signature.
    const content: ContentBlock[] = [];
    for (let index = 0; index < blocks.length; index++) {
      const block = blocks[index];
      if (!block) continue;
      if (block.type === "tool_use" && !this.#stopped.has(index)) {
        this.#incomplete.push({
          id: block.id,
          name: block.name,
          reason: `the reply stopped (${this.#stopReason || "early"}) while writing it`,
        });
      }
      const cleaned = cleanBlock(block);
      if (cleaned) content.push(cleaned);
    }
    const event: ModelStreamEvent = {
      type: "message",
      message: { role: "assistant", content },
      stopReason: this.#stopReason || "end_turn",
      usage: this.#usage,
    };
    if (this.#incomplete.length) event.incompleteToolCalls = this.#incomplete;
    return event;
  }
}

/** An error event inside the stream: typed by its `type`, with no HTTP status (RELIABILITY P7). */
function streamError(type: string, message: string): APIError {
  const text = `${type}: ${message}`;
  if (type === "overloaded_error") return new OverloadedError(text, { type });
  if (type === "rate_limit_error") return new RateLimitError(text, { type });
  if (type === "api_error") return new InternalServerError(text, { type });
  return new APIError(text, { type });
}

function cleanBlock(block: StreamedBlock): ContentBlock | undefined {
  if (block.type === "text" && block.text === "") return undefined;
  if (block.type === "thinking" && !block.signature) {
    const { signature: _unsigned, ...rest } = block;
    return rest as ContentBlock;
  }
  return block;
}

function withoutBreakpoint(block: StreamedBlock): StreamedBlock {
  const { cache_control: _serverBreakpoint, ...rest } = block;
  return rest as StreamedBlock;
}

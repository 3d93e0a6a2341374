import type { ContentBlock, Message } from "../core/messages.ts";
import { AnthropicDecoder } from "./anthropic-decoder.ts";
import { anthropicOutputSchema } from "./anthropic-schema.ts";
import type { Model, ModelRequest, ModelStreamEvent, ModelToolSpec } from "./model.ts";
import {
  lowerCaseKeys,
  PROVIDER_OPTION_KEYS,
  type ProviderOptions,
  resolveProvider,
} from "./provider-options.ts";
import {
  ANTHROPIC_EFFORT_BUDGETS,
  ANTHROPIC_MIN_BUDGET,
  type ReasoningSettings,
  refuseReasoning,
} from "./reasoning.ts";
import { type Refuser, refuse, toolChoiceOf } from "./settings.ts";
import { readErrorBody, streamWithRetries } from "./transport.ts";

export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
export const ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-4-6";
const ANTHROPIC_VERSION = "2023-06-01";

export interface AnthropicOptions extends ProviderOptions {
  /** Default 8192. */
  maxTokens?: number | undefined;
  /** Extended thinking, sent as is: `{ type: "enabled", budget_tokens }`. Thinking blocks are kept and sent back unchanged. */
  thinking?: Record<string, unknown> | undefined;
  /** Cache breakpoints on the system prompt, the tool list and the transcript; default on. */
  promptCaching?: boolean | undefined;
  /**
   * Typed output (the agent's `output`) through the API's structured outputs (`output_config`),
   * for the models and endpoints that have them; default off: the engine offers a `final_output`
   * tool instead, which every model and Anthropic-compatible endpoint takes.
   */
  structuredOutputs?: boolean | undefined;
}

const ANTHROPIC_KEYS: ReadonlySet<string> = new Set([
  ...PROVIDER_OPTION_KEYS,
  "maxTokens",
  "thinking",
  "promptCaching",
]);

/**
 * The Anthropic Messages API (Anthropic itself and Anthropic-compatible endpoints), streamed.
 * `baseURL` excludes `/v1`; `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL` are read when not given.
 */
export function anthropic(options: AnthropicOptions = {}): Model {
  const { apiKey, endpoint, transport, modelId, missingKeyHint } = resolveProvider({
    prefix: "anthropic()",
    options,
    keys: ANTHROPIC_KEYS,
    variable: "ANTHROPIC",
    defaultBaseURL: ANTHROPIC_DEFAULT_BASE_URL,
    path: "/v1/messages",
    defaultModel: ANTHROPIC_DEFAULT_MODEL,
  });
  const caching = options.promptCaching ?? true;
  const structuredOutputs = options.structuredOutputs ?? false;
  // Limits that are Anthropic's own: a compatible endpoint (another host) may allow more.
  const ownHost = new URL(endpoint).hostname === new URL(ANTHROPIC_DEFAULT_BASE_URL).hostname;
  const thinking =
    options.thinking !== undefined &&
    options.thinking !== null &&
    (options.thinking as { type?: unknown }).type !== "disabled";
  // What every call sends alike, made once: the headers, and how errors and streams are read.
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
    "anthropic-version": ANTHROPIC_VERSION,
    ...(apiKey ? { "x-api-key": apiKey } : {}),
    ...lowerCaseKeys(options.headers),
  };
  const readError = (status: number, responseHeaders: Record<string, string>, text: string) =>
    readErrorBody(status, responseHeaders, text, "request-id", missingKeyHint);
  const createDecoder = () => new AnthropicDecoder();

  return {
    provider: "anthropic",
    modelId,
    structuredOutputs,
    stream(
      request: ModelRequest,
      { signal }: { signal: AbortSignal },
    ): AsyncIterable<ModelStreamEvent> {
      const settings = request.settings ?? {};
      const maxTokens = settings.maxOutputTokens ?? request.maxTokens ?? options.maxTokens ?? 8192;
      // modelSettings.reasoning, when given, replaces the provider's `thinking` for this call.
      const reasoned = settings.reasoning ? thinkingOf(settings.reasoning) : undefined;
      const body: Record<string, unknown> = {
        model: request.modelName ?? modelId,
        // The thinking budget counts toward max_tokens, which must exceed it: the answer keeps
        // the room it was given.
        max_tokens: maxTokens + (reasoned?.budget_tokens ?? 0),
        messages: wireMessages(request.messages, caching),
        stream: true,
      };
      applySettings(body, request, {
        ownHost,
        thinking: reasoned ? reasoned.type === "enabled" : thinking,
      });
      if (request.system) {
        body.system = [
          { type: "text", text: request.system, ...(caching ? { cache_control: EPHEMERAL } : {}) },
        ];
      }
      if (request.tools.length) body.tools = wireTools(request.tools, caching);
      if (reasoned) {
        if (reasoned.type === "enabled") body.thinking = reasoned;
      } else if (options.thinking) body.thinking = options.thinking;
      if (structuredOutputs && request.output) {
        // Structured outputs as generally available: `output_config.format`, no beta header.
        // Followed: https://platform.claude.com/docs/en/build-with-claude/structured-outputs
        // ("Migrating from beta? The output_format parameter has moved to output_config.format,
        // and beta headers are no longer required"). The beta form (`output_format` with
        // `anthropic-beta: structured-outputs-2025-11-13`) is only kept for a transition period.
        body.output_config = {
          format: { type: "json_schema", schema: anthropicOutputSchema(request.output.schema) },
        };
      }
      return streamWithRetries({
        url: endpoint,
        // A copy per call: a user's fetch may change what it is given.
        headers: { ...headers },
        body,
        signal,
        transport,
        readError,
        createDecoder,
      });
    },
  };
}

const EPHEMERAL = { type: "ephemeral" } as const;

/**
 * `modelSettings.reasoning` as Anthropic's `thinking`: `budgetTokens` as its budget, else the
 * budget of the effort (`ANTHROPIC_EFFORT_BUDGETS`); effort `"none"` (or a budget of 0) turns it
 * off. A summary is refused: Anthropic streams its thinking without one.
 */
function thinkingOf(
  reasoning: ReasoningSettings,
):
  | { type: "enabled"; budget_tokens: number }
  | { type: "disabled"; budget_tokens?: undefined }
  | undefined {
  refuseReasoning(
    ANTHROPIC,
    reasoning,
    ["summary"],
    "Anthropic's thinking is streamed as it is, with no summary to ask for: leave reasoning.summary out.",
  );
  const { effort, budgetTokens } = reasoning;
  if (budgetTokens === 0 || (budgetTokens === undefined && effort === "none"))
    return { type: "disabled" };
  if (budgetTokens === undefined && effort === undefined) return undefined;
  const budget =
    budgetTokens ?? ANTHROPIC_EFFORT_BUDGETS[effort as keyof typeof ANTHROPIC_EFFORT_BUDGETS];
  if (budget < ANTHROPIC_MIN_BUDGET)
    throw refuse(
      ANTHROPIC,
      `modelSettings.reasoning.budgetTokens is ${budget}, below the smallest thinking budget of ${ANTHROPIC.api} (${ANTHROPIC_MIN_BUDGET}). Give at least ${ANTHROPIC_MIN_BUDGET}, or 0 to turn thinking off.`,
    );
  return { type: "enabled", budget_tokens: budget };
}

/**
 * The tools as sent: as given, the last with a cache breakpoint when caching. That copy is made
 * once per tool spec (and again only if one of its fields was replaced), not on every call.
 */
function wireTools(tools: readonly ModelToolSpec[], caching: boolean): unknown[] {
  if (!caching) return tools.slice();
  const wire: unknown[] = tools.slice(0, -1);
  const last = tools.at(-1)!;
  let marked = withBreakpoint.get(last);
  if (
    !marked ||
    marked.name !== last.name ||
    marked.description !== last.description ||
    marked.input_schema !== last.input_schema
  ) {
    marked = { ...last, cache_control: EPHEMERAL };
    withBreakpoint.set(last, marked);
  }
  wire.push(marked);
  return wire;
}

const withBreakpoint = new WeakMap<
  ModelToolSpec,
  ModelToolSpec & { cache_control: typeof EPHEMERAL }
>();

const ANTHROPIC: Refuser = { prefix: "anthropic()", api: "the Anthropic Messages API" };

/**
 * The call's model settings as Messages API fields (`temperature`, `top_p`, `stop_sequences`,
 * `tool_choice`; `max_tokens` is set with the body), after the refusals that need no request:
 * a temperature above 1 on Anthropic's own host, and a forced tool choice with thinking on.
 */
function applySettings(
  body: Record<string, unknown>,
  request: ModelRequest,
  context: { ownHost: boolean; thinking: boolean },
): void {
  const settings = request.settings;
  if (!settings) return;
  if (settings.temperature !== undefined) {
    if (context.ownHost && settings.temperature > 1) {
      throw refuse(
        ANTHROPIC,
        `modelSettings.temperature is ${settings.temperature}, above the limit of ${ANTHROPIC.api}, whose temperature ranges from 0 to 1. Give a value from 0 to 1.`,
      );
    }
    body.temperature = settings.temperature;
  }
  if (settings.topP !== undefined) body.top_p = settings.topP;
  if (settings.stopSequences?.length) body.stop_sequences = settings.stopSequences;
  const choice = toolChoiceOf(ANTHROPIC, request);
  if (choice === undefined) return;
  if (context.thinking && (choice === "any" || typeof choice === "object")) {
    const named = choice === "any" ? '"any"' : `{ name: "${choice.name}" }`;
    throw refuse(
      ANTHROPIC,
      `modelSettings.toolChoice ${named} forces a tool call, which ${ANTHROPIC.api} does not allow with thinking on: with thinking, only "auto" and "none" are allowed. Use "auto", or turn thinking off.`,
    );
  }
  body.tool_choice =
    typeof choice === "object" ? { type: "tool", name: choice.name } : { type: choice };
}

/**
 * The transcript as the API wants it: `incomplete` stripped, empty replies left out, turns that
 * alternate, and with caching a breakpoint on the last message, so each turn of a tool loop
 * reads everything before it from the cache.
 */
function wireMessages(messages: Message[], caching: boolean): unknown[] {
  const wire: { role: string; content: string | unknown[] }[] = [];
  for (const message of messages) {
    // A reply with nothing in it (the API refuses empty messages) says nothing worth replaying.
    if (message.role === "assistant" && message.content.length === 0) continue;
    const previous = wire.at(-1);
    const content = withoutProviderData(message.content);
    // Turns alternate on the wire: consecutive messages of one role (a message added after a
    // batch's results) go as one turn, which is what the API makes of them.
    if (previous?.role === message.role) {
      previous.content = [...blocksOf(previous.content), ...blocksOf(content)];
    } else wire.push({ role: message.role, content });
  }
  if (caching) {
    // The last message, and the one two before it (the previous turn's end): the cache looks back
    // only about 20 blocks from a breakpoint, and one wide tool turn can add more than that.
    // With the system prompt and the tools, that is the API's limit of four breakpoints.
    for (const message of [wire.at(-1), wire.length >= 3 ? wire.at(-3) : undefined]) {
      if (message) markLastBlock(message);
    }
  }
  return wire;
}

/**
 * Another provider's data on a block (Gemini's thought signatures, a Chat Completions call's
 * `extra_content`) is not Anthropic's: the blocks go without it, and an empty text block that
 * only carried it, or another provider's thinking, goes not at all. The content as it is when no block has any.
 */
function withoutProviderData(content: string | ContentBlock[]): string | ContentBlock[] {
  if (typeof content === "string") return content;
  if (!content.some((block) => (block as { providerData?: unknown }).providerData !== undefined))
    return content;
  const blocks: ContentBlock[] = [];
  for (const block of content) {
    if (!("providerData" in block)) {
      blocks.push(block);
      continue;
    }
    if (block.type === "text" && block.text === "") continue;
    // Another protocol's reasoning item (OpenAI Responses): never sent here.
    if (block.type === "reasoning") continue;
    // Another provider's thinking has no Anthropic signature, which the API requires.
    if (block.type === "thinking" && !block.signature) continue;
    const { providerData: _dropped, ...rest } = block as ContentBlock & { providerData?: unknown };
    blocks.push(rest as ContentBlock);
  }
  return blocks;
}

function blocksOf(content: string | readonly unknown[]): unknown[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : [...content];
}

function markLastBlock(message: { content: string | unknown[] }): void {
  const blocks = (
    typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : message.content
  ) as ContentBlock[];
  let index = blocks.length - 1;
  while (index >= 0 && !takesBreakpoint(blocks[index]!)) index--;
  if (index < 0) return;
  const marked = blocks.slice();
  marked[index] = { ...blocks[index]!, cache_control: EPHEMERAL } as unknown as ContentBlock;
  message.content = marked;
}

function takesBreakpoint(block: ContentBlock): boolean {
  return (
    block.type !== "thinking" &&
    block.type !== "redacted_thinking" &&
    !(block.type === "text" && block.text === "")
  );
}

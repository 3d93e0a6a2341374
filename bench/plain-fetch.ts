/**
 * The baseline of the HTTP benchmarks: the least code that does a streaming tool loop's work with
 * plain `fetch` and `eventsource-parser`. Per turn: send the transcript, parse the SSE stream,
 * assemble the text and the tool call from their deltas, run the handler, append the results,
 * send the next request. No retries, timeouts, validation, events or abort handling.
 *
 * It sends what skein sends, byte for byte (the same system prompt, tool list, cache breakpoints
 * and message shapes), so that the mock server's work is the same on both sides. It does not load
 * skein: the W3 child runs it for the plain side in a process of its own.
 */
import { randomUUID } from "node:crypto";
import { createParser } from "eventsource-parser";
import type { MockServer } from "skein/testing";
import {
  API_KEY,
  baseURL,
  FINAL_TEXT,
  getWeather,
  MODEL,
  PROMPT,
  type Protocol,
  SYSTEM,
  TOOL,
} from "./http-workload.ts";
import type { SkeinSide } from "./skein-side.ts";

const HANDLERS: Record<string, (input: any) => Promise<string>> = { [TOOL.name]: getWeather };

const EPHEMERAL = { type: "ephemeral" };

/** Runs one conversation to its final text. */
export function plainRun(options: {
  protocol: Protocol;
  baseURL: string;
  prompt: string;
}): Promise<string> {
  switch (options.protocol) {
    case "anthropic":
      return anthropicRun(options.baseURL, options.prompt);
    case "gemini":
      return geminiRun(options.baseURL, options.prompt);
    case "responses":
      return responsesRun(options.baseURL, options.prompt);
    default:
      return openaiRun(options.baseURL, options.prompt);
  }
}

export async function runPlain(url: string, protocol: Protocol): Promise<void> {
  const text = await plainRun({ protocol, baseURL: baseURL(url, protocol), prompt: PROMPT });
  if (text !== FINAL_TEXT) throw new Error(`bench: the plain loop ended with ${text}`);
}

/** POSTs `body` and hands each SSE event's data to `onData` as the stream arrives. */
async function streamEvents(
  request: { url: string; headers: Record<string, string>; body: string },
  onData: (data: string) => void,
): Promise<void> {
  const response = await fetch(request.url, {
    method: "POST",
    headers: request.headers,
    body: request.body,
  });
  if (!response.ok || !response.body) throw new Error(`bench: HTTP ${response.status}`);
  const parser = createParser({ onEvent: (event) => onData(event.data) });
  const decoder = new TextDecoder();
  // Read with a reader, as skein reads.
  const reader = response.body.getReader();
  while (true) {
    const chunk = await reader.read();
    if (chunk.done) return;
    parser.feed(decoder.decode(chunk.value, { stream: true }));
  }
}

// ---------------------------------------------------------------- Anthropic Messages

const ANTHROPIC_HEADERS = {
  "content-type": "application/json",
  accept: "text/event-stream",
  "anthropic-version": "2023-06-01",
  "x-api-key": API_KEY,
};
const ANTHROPIC_SYSTEM = [{ type: "text", text: SYSTEM, cache_control: EPHEMERAL }];
const ANTHROPIC_TOOLS = [
  {
    name: TOOL.name,
    description: TOOL.description,
    input_schema: TOOL.inputSchema,
    cache_control: EPHEMERAL,
  },
];

/** The message with `cache_control` on its last block (a string becomes one text block). */
function withBreakpoint(message: { role: string; content: string | object[] }) {
  const blocks =
    typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : message.content;
  const content = blocks.map((block, index) =>
    index === blocks.length - 1 ? { ...block, cache_control: EPHEMERAL } : block,
  );
  return { role: message.role, content };
}

async function anthropicRun(baseURL: string, prompt: string): Promise<string> {
  const messages: any[] = [{ role: "user", content: prompt }];
  while (true) {
    // Cache breakpoints on the last message and the one two before it, as skein sets them.
    const wire = messages.slice();
    for (const position of [wire.length - 1, wire.length - 3])
      if (position >= 0) wire[position] = withBreakpoint(wire[position]);
    const body = JSON.stringify({
      model: MODEL,
      max_tokens: 8192,
      messages: wire,
      stream: true,
      system: ANTHROPIC_SYSTEM,
      tools: ANTHROPIC_TOOLS,
    });
    const content: any[] = [];
    let json = "";
    await streamEvents(
      { url: `${baseURL}/v1/messages`, headers: ANTHROPIC_HEADERS, body },
      (data) => {
        const event = JSON.parse(data);
        if (event.type === "content_block_start") {
          content[event.index] = event.content_block;
          json = "";
        } else if (event.type === "content_block_delta") {
          if (event.delta.type === "text_delta") content[event.index].text += event.delta.text;
          else if (event.delta.type === "input_json_delta") json += event.delta.partial_json;
        } else if (event.type === "content_block_stop") {
          const block = content[event.index];
          if (block.type === "tool_use") block.input = json ? JSON.parse(json) : {};
        }
      },
    );
    messages.push({ role: "assistant", content });
    const calls = content.filter((block) => block.type === "tool_use");
    if (calls.length === 0) return content.map((block) => block.text ?? "").join("");
    const results = await Promise.all(
      calls.map(async (call) => ({
        type: "tool_result",
        tool_use_id: call.id,
        content: await HANDLERS[call.name]!(call.input),
        is_error: false,
      })),
    );
    messages.push({ role: "user", content: results });
  }
}

// ---------------------------------------------------------------- OpenAI Chat Completions

const OPENAI_HEADERS = {
  "content-type": "application/json",
  accept: "text/event-stream",
  authorization: `Bearer ${API_KEY}`,
};
const OPENAI_TOOLS = [
  {
    type: "function",
    function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.inputSchema },
  },
];

async function openaiRun(baseURL: string, prompt: string): Promise<string> {
  const messages: any[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: prompt },
  ];
  while (true) {
    const body = JSON.stringify({
      model: MODEL,
      messages,
      stream: true,
      stream_options: { include_usage: true },
      tools: OPENAI_TOOLS,
    });
    let text = "";
    const calls: { id: string; name: string; arguments: string }[] = [];
    await streamEvents(
      { url: `${baseURL}/chat/completions`, headers: OPENAI_HEADERS, body },
      (data) => {
        if (data === "[DONE]") return;
        const delta = JSON.parse(data).choices[0]?.delta;
        if (!delta) return;
        if (delta.content) text += delta.content;
        for (const fragment of delta.tool_calls ?? []) {
          calls[fragment.index] ??= { id: "", name: "", arguments: "" };
          const call = calls[fragment.index]!;
          if (fragment.id) call.id = fragment.id;
          if (fragment.function?.name) call.name += fragment.function.name;
          if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
        }
      },
    );
    const toolCalls = calls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    }));
    messages.push({
      role: "assistant",
      content: text || null,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    });
    if (calls.length === 0) return text;
    const results = await Promise.all(
      calls.map(async (call) => ({
        role: "tool",
        tool_call_id: call.id,
        content: await HANDLERS[call.name]!(JSON.parse(call.arguments)),
      })),
    );
    messages.push(...results);
  }
}

// ---------------------------------------------------------------- OpenAI Responses

const RESPONSES_TOOLS = [
  {
    type: "function",
    name: TOOL.name,
    description: TOOL.description,
    parameters: TOOL.inputSchema,
    strict: false,
  },
];

async function responsesRun(baseURL: string, prompt: string): Promise<string> {
  // Stateless, as skein is: every request carries the whole transcript as input items, and one
  // cache key per conversation (skein's is the run's session id).
  const input: any[] = [{ role: "user", content: [{ type: "input_text", text: prompt }] }];
  const cacheKey = randomUUID();
  while (true) {
    const body = JSON.stringify({
      model: MODEL,
      input,
      store: false,
      include: ["reasoning.encrypted_content"],
      stream: true,
      instructions: SYSTEM,
      tools: RESPONSES_TOOLS,
      parallel_tool_calls: true,
      prompt_cache_key: cacheKey,
    });
    let text = "";
    const calls: { id: string; call_id: string; name: string; arguments: string }[] = [];
    await streamEvents({ url: `${baseURL}/responses`, headers: OPENAI_HEADERS, body }, (data) => {
      const event = JSON.parse(data);
      if (event.type === "response.output_text.delta") text += event.delta;
      else if (event.type === "response.output_item.done" && event.item.type === "function_call")
        calls.push(event.item);
    });
    if (text) input.push({ role: "assistant", content: [{ type: "output_text", text }] });
    for (const call of calls)
      input.push({
        type: "function_call",
        id: call.id,
        call_id: call.call_id,
        name: call.name,
        arguments: call.arguments,
      });
    if (calls.length === 0) return text;
    const results = await Promise.all(
      calls.map(async (call) => ({
        type: "function_call_output",
        call_id: call.call_id,
        output: await HANDLERS[call.name]!(JSON.parse(call.arguments)),
      })),
    );
    input.push(...results);
  }
}

// ---------------------------------------------------------------- Gemini

const GEMINI_HEADERS = {
  "content-type": "application/json",
  accept: "text/event-stream",
  "x-goog-api-key": API_KEY,
};
const GEMINI_SYSTEM = { parts: [{ text: SYSTEM }] };
const GEMINI_TOOLS = [
  {
    functionDeclarations: [
      { name: TOOL.name, description: TOOL.description, parametersJsonSchema: TOOL.inputSchema },
    ],
  },
];

async function geminiRun(baseURL: string, prompt: string): Promise<string> {
  const contents: any[] = [{ role: "user", parts: [{ text: prompt }] }];
  const url = `${baseURL}/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`;
  while (true) {
    const body = JSON.stringify({
      contents,
      systemInstruction: GEMINI_SYSTEM,
      tools: GEMINI_TOOLS,
    });
    let text = "";
    const calls: { name: string; args: any }[] = [];
    await streamEvents({ url, headers: GEMINI_HEADERS, body }, (data) => {
      for (const part of JSON.parse(data).candidates?.[0]?.content?.parts ?? []) {
        if (part.functionCall) calls.push(part.functionCall);
        else if (typeof part.text === "string") text += part.text;
      }
    });
    const parts: any[] = text ? [{ text }] : [];
    for (const call of calls) parts.push({ functionCall: { name: call.name, args: call.args } });
    contents.push({ role: "model", parts });
    if (calls.length === 0) return text;
    const results = await Promise.all(
      calls.map(async (call) => ({
        functionResponse: {
          name: call.name,
          response: { output: await HANDLERS[call.name]!(call.args) },
        },
      })),
    );
    contents.push({ role: "user", parts: results });
  }
}

// ---------------------------------------------------------------- the same work on both sides

/**
 * A request body as compared: the values that differ from run to run by design, the same length
 * on both sides, are masked: a Responses conversation's cache key (a random UUID) and the mock
 * server's item ids, which count its requests.
 */
function comparable(request: { body: unknown }): string {
  return JSON.stringify(request.body)
    .replace(/"prompt_cache_key":"[0-9a-f-]{36}"/g, '"prompt_cache_key":"<uuid>"')
    .replace(/"id":"fc_mock_\d+_/g, '"id":"fc_mock_<n>_');
}

/**
 * Runs one skein run and one plain run of `server`'s script and compares the request bodies the
 * server received; returns a warning when they differ (then this loop needs updating).
 */
export async function checkSameRequests(
  server: MockServer,
  protocol: Protocol,
  skein: SkeinSide,
): Promise<string | undefined> {
  server.requests.length = 0;
  await skein.run(skein.agent(server.url, protocol));
  const fromSkein = server.requests.splice(0).map(comparable);
  await runPlain(server.url, protocol);
  const fromPlain = server.requests.splice(0).map(comparable);
  const index = fromSkein.findIndex((body, position) => body !== fromPlain[position]);
  if (index < 0 && fromSkein.length === fromPlain.length) return undefined;
  const at = index < 0 ? fromSkein.length : index;
  return `${protocol}: request ${at + 1} differs between skein and the plain loop:\n  skein ${fromSkein[at]?.slice(0, 300)}\n  plain ${fromPlain[at]?.slice(0, 300)}`;
}

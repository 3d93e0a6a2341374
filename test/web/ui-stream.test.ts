// toUIMessageStream read by ai's own readUIMessageStream: every kind of event becomes the part
// useChat shows, and the SSE response carries the same chunks.
import { readUIMessageStream, type UIMessage } from "ai";
import {
  type AgentEvent,
  agentTool,
  createBareAgent,
  type Model,
  type ModelStreamEvent,
  memoryStore,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { toUIMessageStream, toUIMessageStreamResponse, type UIMessageChunk } from "skein/web";
import { describe, expect, it } from "vitest";
import { z } from "zod";

async function lastMessage(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage> {
  let message: UIMessage | undefined;
  for await (const each of readUIMessageStream({
    stream: stream as ReadableStream<any>,
    onError: (error) => {
      throw error;
    },
  }))
    message = each;
  if (!message) throw new Error("no message");
  return message;
}

async function chunksOf(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** Parses an SSE body into its data payloads. */
function sseData(text: string): string[] {
  return text
    .split("\n\n")
    .filter(Boolean)
    .map((event) => {
      expect(event.startsWith("data: ")).toBe(true);
      return event.slice(6);
    });
}

const weather = tool(
  "weather",
  "The weather in a city",
  z.object({ city: z.string() }),
  async function* ({ city }) {
    yield { progress: `looking up ${city}` };
    return `Sunny in ${city}`;
  },
);

const emitting = tool("announce", "Announces", z.object({}), async (_input, ctx) => {
  ctx.emit({ type: "app.note", text: "<b>hello</b>" });
  return "announced";
});

const failing = tool("broken", "Fails", z.object({}), async () => {
  throw new Error("the tool broke");
});

describe("toUIMessageStream through readUIMessageStream", () => {
  it("text, reasoning, tool calls with progress, results, errors and custom events become parts", async () => {
    const agent = createBareAgent({
      model: scriptedModel([
        {
          thinking: "Let me think.",
          text: "Checking.",
          toolCalls: [
            { id: "c1", name: "weather", input: { city: "Oslo" } },
            { id: "c2", name: "announce", input: {} },
            { id: "c3", name: "broken", input: {} },
          ],
        },
        { text: "It is sunny." },
      ]),
      tools: [weather, emitting, failing],
    });
    const chunks = await chunksOf(toUIMessageStream(agent.stream("Weather in Oslo?")));
    const types = chunks.map((chunk) => chunk.type);
    expect(types[0]).toBe("start");
    expect(types.at(-1)).toBe("finish");
    for (const type of [
      "start-step",
      "finish-step",
      "reasoning-start",
      "reasoning-delta",
      "reasoning-end",
      "text-start",
      "text-delta",
      "text-end",
      "tool-input-available",
      "tool-output-available",
      "tool-output-error",
      "data-app.note",
    ])
      expect(types, type).toContain(type);
    expect(chunks).toContainEqual(
      expect.objectContaining({
        type: "tool-output-available",
        toolCallId: "c1",
        preliminary: true,
      }),
    );
    expect(types.filter((type) => type === "start-step")).toHaveLength(2);

    const again = createBareAgent({
      model: scriptedModel([
        {
          thinking: "Let me think.",
          text: "Checking.",
          toolCalls: [
            { id: "c1", name: "weather", input: { city: "Oslo" } },
            { id: "c2", name: "announce", input: {} },
            { id: "c3", name: "broken", input: {} },
          ],
        },
        { text: "It is sunny." },
      ]),
      tools: [weather, emitting, failing],
    });
    const message = await lastMessage(toUIMessageStream(again.stream("Weather in Oslo?")));
    expect(message.role).toBe("assistant");
    const parts = message.parts as any[];
    expect(parts.map((part) => part.type)).toEqual([
      "step-start",
      "reasoning",
      "text",
      "dynamic-tool",
      "dynamic-tool",
      "dynamic-tool",
      "data-app.note",
      "step-start",
      "text",
    ]);
    expect(parts[1]).toMatchObject({ text: "Let me think.", state: "done" });
    expect(parts[2]).toMatchObject({ text: "Checking.", state: "done" });
    expect(parts[3]).toMatchObject({
      toolName: "weather",
      toolCallId: "c1",
      state: "output-available",
      input: { city: "Oslo" },
      output: "Sunny in Oslo",
    });
    expect(parts[3].preliminary).not.toBe(true);
    expect(parts[4]).toMatchObject({ toolName: "announce", output: "announced" });
    expect(parts[5]).toMatchObject({ toolName: "broken", state: "output-error" });
    expect(parts[5].errorText).toContain("the tool broke");
    // Custom event text stays data: the page renders it as text (React escapes it).
    expect(parts[6].data).toMatchObject({ type: "app.note", text: "<b>hello</b>" });
    expect(parts[8]).toMatchObject({ text: "It is sunny." });
  });

  it("tool input deltas stream as tool-input-start/-delta before the call is available", async () => {
    const model: Model = {
      provider: "test",
      modelId: "deltas",
      async *stream(request): AsyncGenerator<ModelStreamEvent> {
        if (request.messages.length > 1) {
          yield { type: "text_delta", text: "done" };
          yield {
            type: "message",
            message: { role: "assistant", content: [{ type: "text", text: "done" }] },
            stopReason: "end_turn",
          };
          return;
        }
        yield { type: "tool_input_delta", id: "t1", name: "weather", delta: '{"city":' };
        yield { type: "tool_input_delta", id: "t1", name: "weather", delta: '"Rome"}' };
        const block = {
          type: "tool_use" as const,
          id: "t1",
          name: "weather",
          input: { city: "Rome" },
        };
        yield { type: "tool_call", id: "t1", name: "weather", input: block.input };
        yield {
          type: "message",
          message: { role: "assistant", content: [block] },
          stopReason: "tool_use",
        };
      },
    };
    const agent = createBareAgent({ model, tools: [weather] });
    const chunks = await chunksOf(toUIMessageStream(agent.stream("Rome?")));
    const types = chunks.map((chunk) => chunk.type);
    const start = types.indexOf("tool-input-start");
    expect(start).toBeGreaterThan(-1);
    expect(types.slice(start, start + 3)).toEqual([
      "tool-input-start",
      "tool-input-delta",
      "tool-input-delta",
    ]);
    expect(types.indexOf("tool-input-available")).toBeGreaterThan(start);
    const message = await lastMessage(
      toUIMessageStream(createBareAgent({ model, tools: [weather] }).stream("Rome?")),
    );
    expect(message.parts.find((part) => part.type === "dynamic-tool")).toMatchObject({
      state: "output-available",
      input: { city: "Rome" },
    });
  });

  it("a failed run ends with an error chunk the reader reports", async () => {
    const agent = createBareAgent({ model: scriptedModel([new Error("provider down")]) });
    const chunks = await chunksOf(toUIMessageStream(agent.stream("hi")));
    expect(chunks.at(-2)).toMatchObject({ type: "error" });
    expect((chunks.at(-2) as { errorText: string }).errorText).toContain("provider down");
    expect(chunks.at(-1)).toEqual({ type: "finish", finishReason: "error" });
  });

  it("a paused run ends with a tool-approval-request part", async () => {
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "d1", name: "weather", input: { city: "Paris" } }] },
      ]),
      tools: [weather],
      permissions: { ask: ["weather"] },
    });
    const message = await lastMessage(toUIMessageStream(agent.stream("Paris?")));
    expect(message.parts.find((part) => part.type === "dynamic-tool")).toMatchObject({
      toolCallId: "d1",
      state: "approval-requested",
      approval: { id: "d1" },
    });
  });

  it("a child agent's run is its call's preliminary output and data parts, not top-level text", async () => {
    const child = createBareAgent({
      model: scriptedModel([
        {
          text: "Child looks.",
          toolCalls: [{ id: "k1", name: "weather", input: { city: "Lima" } }],
        },
        { text: "Child: sunny in Lima." },
      ]),
      tools: [weather],
    });
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "researcher", input: { prompt: "Lima?" } }] },
        { text: "Parent: it is sunny." },
      ]),
      tools: [agentTool(child, { name: "researcher", description: "Researches" })],
    });
    const chunks = await chunksOf(toUIMessageStream(agent.stream("Lima?")));
    const texts = chunks
      .filter(
        (chunk): chunk is Extract<UIMessageChunk, { type: "text-delta" }> =>
          chunk.type === "text-delta",
      )
      .map((chunk) => chunk.delta);
    expect(texts).toEqual(["Parent: it is sunny."]);
    expect(chunks).toContainEqual(
      expect.objectContaining({
        type: "tool-output-available",
        toolCallId: "p1",
        preliminary: true,
        output: { replies: ["Child looks."] },
      }),
    );
    expect(chunks).toContainEqual(
      expect.objectContaining({ type: "data-skein-child-tool", id: "p1/k1" }),
    );
  });

  it("steering messages and retries are data parts", async () => {
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "s1", name: "weather", input: { city: "Oslo" } }] },
        { text: "ok" },
      ]),
      tools: [weather],
      sessionStore: memoryStore(),
    });
    const run = agent.stream("go");
    const events: AgentEvent[] = [];
    const tapped = (async function* () {
      for await (const event of run) {
        events.push(event);
        if (event.type === "tool_start") run.steer("also Bergen");
        yield event;
      }
    })();
    const chunks = await chunksOf(toUIMessageStream(tapped));
    expect(chunks).toContainEqual(
      expect.objectContaining({
        type: "data-skein-user-message",
        data: expect.objectContaining({ origin: "steer" }),
      }),
    );
  });
});

describe("toUIMessageStreamResponse", () => {
  it("is an SSE response with the protocol's headers, the same chunks, and [DONE]", async () => {
    const script = [{ thinking: "Hmm.", text: 'Say "hi"\n<script>' }];
    const response = toUIMessageStreamResponse(
      createBareAgent({ model: scriptedModel(script) }).stream("hi"),
      { headers: { "x-extra": "1" } },
    );
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(response.headers.get("x-extra")).toBe("1");
    const data = sseData(await response.text());
    expect(data.at(-1)).toBe("[DONE]");
    const fromSse = data.slice(0, -1).map((each) => JSON.parse(each) as UIMessageChunk);
    const direct = await chunksOf(
      toUIMessageStream(createBareAgent({ model: scriptedModel(script) }).stream("hi")),
    );
    const strip = (chunks: UIMessageChunk[]) =>
      chunks.map((chunk) => ({ ...chunk, id: undefined, messageId: undefined }));
    expect(strip(fromSse)).toEqual(strip(direct));
    expect(fromSse).toContainEqual(expect.objectContaining({ delta: 'Say "hi"\n<script>' }));
  });

  it("streamed deltas of text and reasoning parts are the same chunks as toUIMessageStream's", async () => {
    // Several deltas per part, parts alternating, with what JSON must escape: the SSE writer
    // writes the deltas of an open part without chunk objects, and must agree with them.
    const deltas: ModelStreamEvent[] = [
      { type: "thinking_delta", thinking: "Think " },
      { type: "thinking_delta", thinking: 'about "quotes"' },
      { type: "text_delta", text: "Line one\n" },
      { type: "text_delta", text: "tab\there \\ back" },
      { type: "text_delta", text: "\u0001 \u2028 é 🌍 <script>" },
      { type: "thinking_delta", thinking: "again" },
      { type: "thinking_delta", thinking: "!" },
      { type: "text_delta", text: "End" },
      { type: "text_delta", text: "." },
    ];
    const model = (): Model => ({
      provider: "test",
      modelId: "deltas",
      async *stream(): AsyncGenerator<ModelStreamEvent> {
        yield* deltas;
        yield {
          type: "message",
          message: { role: "assistant", content: [{ type: "text", text: "done" }] },
          stopReason: "end_turn",
        };
      },
    });
    const response = toUIMessageStreamResponse(createBareAgent({ model: model() }).stream("hi"));
    expect(response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    const data = sseData(await response.text());
    expect(data.at(-1)).toBe("[DONE]");
    const fromSse = data.slice(0, -1).map((each) => JSON.parse(each) as UIMessageChunk);
    const direct = await chunksOf(
      toUIMessageStream(createBareAgent({ model: model() }).stream("hi")),
    );
    // Part ids differ per stream (a random prefix) but follow the same pattern.
    const ids = new Map<string, string>();
    const strip = (chunks: UIMessageChunk[], tag: string) =>
      chunks.map((chunk) => {
        const copy: Record<string, unknown> = { ...chunk, messageId: undefined };
        if ("id" in chunk && typeof chunk.id === "string") {
          const key = `${tag}:${chunk.id}`;
          if (!ids.has(key))
            ids.set(key, `part${[...ids.keys()].filter((k) => k.startsWith(tag)).length}`);
          copy.id = ids.get(key);
        }
        return copy;
      });
    expect(strip(fromSse, "sse")).toEqual(strip(direct, "direct"));
    const texts = fromSse
      .filter((chunk) => chunk.type === "text-delta")
      .map((chunk: any) => chunk.delta);
    expect(texts.join("")).toBe("Line one\ntab\there \\ back\u0001 \u2028 é 🌍 <script>End.");
    const message = await lastMessage(
      toUIMessageStream(createBareAgent({ model: model() }).stream("hi")),
    );
    expect(
      message.parts.filter((part) => part.type === "reasoning").map((part: any) => part.text),
    ).toEqual(['Think about "quotes"', "again!"]);
  });
});

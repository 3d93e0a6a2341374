/**
 * The OpenAI Responses API through real recorded streams (fixtures/README.md names their source):
 * a reasoning tool loop whose reasoning item goes back byte for byte, in place; an error event;
 * two message items in one response.
 */
import { createBareAgent, openai, tool } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { closeMockServers, rawServer } from "../support/servers.ts";
import { collect } from "./helpers.ts";
import { fixture } from "./recorded.ts";

afterEach(closeMockServers);

/** Responses framing: each event named after its `type`. */
function responsesSse(lines: string[]): string {
  return lines.map((line) => `event: ${JSON.parse(line).type}\ndata: ${line}\n\n`).join("");
}

/** A fixture holding several responses, split at each response.created. */
function responsesIn(lines: string[]): string[][] {
  const out: string[][] = [];
  for (const line of lines) {
    if (JSON.parse(line).type === "response.created") out.push([]);
    out.at(-1)!.push(line);
  }
  return out;
}

/** Answers the n-th request with `answers[n]`. */
async function serveInOrder(answers: string[]) {
  let next = 0;
  return rawServer((_request, response) => {
    const answer = answers[next++];
    response.writeHead(answer === undefined ? 500 : 200, { "content-type": "text/event-stream" });
    response.end(answer ?? "");
  });
}

describe("openai responses: recorded streams", () => {
  it("a reasoning tool loop: the encrypted reasoning item goes back byte for byte, before its call", async () => {
    const responses = responsesIn(fixture("openai-responses-reasoning-encrypted-content.1"));
    expect(responses).toHaveLength(4);
    const server = await serveInOrder(responses.map(responsesSse));
    const seen: unknown[] = [];
    const calculator = tool(
      "calculator",
      "A minimal calculator",
      z.object({
        a: z.number(),
        b: z.number(),
        op: z.enum(["add", "subtract", "multiply", "divide"]),
      }),
      async ({ a, b, op }) => {
        seen.push({ a, b, op });
        return String(
          op === "add" ? a + b : op === "multiply" ? a * b : op === "subtract" ? a - b : a / b,
        );
      },
    );
    const model = openai({
      baseURL: `${server.url}/v1`,
      apiKey: "k",
      api: "responses",
      model: "gpt-5.1-codex-max",
    });
    const { result, events } = await collect(createBareAgent({ model, tools: [calculator] }));
    expect(result.subtype).toBe("success");
    expect(seen).toEqual([
      { a: 12, b: 7, op: "add" },
      { a: 19, b: 3, op: "multiply" },
      { a: 57, b: 10, op: "multiply" },
    ]);
    expect(result.result).toBe("The final result is **570**.");
    // The summary streamed as thinking.
    const thinking = events.flatMap((event) =>
      event.type === "thinking_delta" ? [event.thinking] : [],
    );
    expect(thinking.join("")).toContain("Calculating step-by-step");
    // The recorded item, exactly as the server gave it in output_item.done.
    const recordedLine = responses[0]!.find((line) => {
      const event = JSON.parse(line);
      return event.type === "response.output_item.done" && event.item.type === "reasoning";
    })!;
    const recordedItem = JSON.stringify(JSON.parse(recordedLine).item);
    for (const request of server.requests.slice(1)) {
      const input = request.body.input as any[];
      const at = input.findIndex((item) => item.type === "reasoning");
      expect(JSON.stringify(input[at])).toBe(recordedItem);
      // In place: right after the prompt, before the call it preceded.
      expect(input[at + 1]).toMatchObject({
        type: "function_call",
        call_id: "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
      });
      expect(request.body).toMatchObject({
        store: false,
        include: ["reasoning.encrypted_content"],
      });
    }
    expect(result.steps.at(-1)!.usage).toMatchObject({ inputTokens: 299, outputTokens: 12 });
  });

  it("an error event (insufficient_quota, details under error) ends the run with a typed error, not retried", async () => {
    const server = await serveInOrder([responsesSse(fixture("openai-responses-error.1")), ""]);
    const model = openai({ baseURL: `${server.url}/v1`, apiKey: "k", api: "responses" });
    const { result } = await collect(createBareAgent({ model }));
    expect(result.error).toMatchObject({ name: "RateLimitError" });
    expect(result.error?.message).toContain("You exceeded your current quota");
    expect(server.requests).toHaveLength(1);
  });

  it("two message items in one response make one answer; cached and reasoning tokens are read", async () => {
    const server = await serveInOrder([responsesSse(fixture("openai-responses-phase.1"))]);
    const model = openai({
      baseURL: `${server.url}/v1`,
      apiKey: "k",
      api: "responses",
      model: "no-price",
    });
    const { result } = await collect(createBareAgent({ model }));
    expect(result.result).toMatch(
      /^Got it — I’ll quickly check[\s\S]*Here are a few \*\*AI headlines/,
    );
    expect(result.usage).toEqual({
      inputTokens: 7112 - 3072,
      outputTokens: 463,
      cacheReadInputTokens: 3072,
      cacheCreationInputTokens: 0,
      reasoningTokens: 64,
    });
  });
});

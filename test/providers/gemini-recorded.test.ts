/**
 * Streams Gemini really sent (recorded by vercel/ai, see fixtures/README.md), decoded by
 * google() through the public API: the mock server plays each recording as the body of its
 * answer, framed as `data:` lines (CRLF, as Google's servers end them). The signatures they hold
 * must come back byte for byte on the next request.
 */
import { ContentFilterError, createBareAgent, google, tool } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { closeMockServers } from "../support/servers.ts";
import { bodies, FAST, serve, streamModel } from "./helpers.ts";
import { fixture } from "./recorded.ts";

afterEach(closeMockServers);

function geminiSse(lines: string[]): string {
  return lines.map((line) => `data: ${line}\r\n\r\n`).join("");
}

const played = (name: string) => ({
  rawBody: geminiSse(fixture(name)),
  contentType: "text/event-stream",
});

const make = (url: string) =>
  google({ baseURL: url, apiKey: "test", model: "gemini-3-pro-preview", ...FAST });

/** The signature of the recording's first part that has one. */
function recordedSignature(name: string): string {
  for (const line of fixture(name)) {
    const parts = JSON.parse(line).candidates?.[0]?.content?.parts ?? [];
    for (const part of parts) if (part.thoughtSignature) return part.thoughtSignature;
  }
  throw new Error(`${name} holds no signature`);
}

describe("recorded Gemini streams", () => {
  it.each(["google-text", "google-reasoning-gemini3"])(
    "%s: text deltas, the signature kept on an empty text part, usage with thoughts",
    async (name) => {
      const server = await serve([played(name)]);
      const events = await streamModel(make(server.url));
      const message = events.at(-1) as any;
      const text = fixture(name)
        .flatMap((line) => JSON.parse(line).candidates[0].content.parts)
        .map((part: any) => part.text)
        .join("");
      expect(
        events
          .filter((event) => event.type === "text_delta")
          .map((event: any) => event.text)
          .join(""),
      ).toBe(text);
      expect(message.stopReason).toBe("end_turn");
      expect(message.message.content).toEqual([
        { type: "text", text },
        {
          type: "text",
          text: "",
          providerData: {
            wire: "gemini",
            origin: server.url,
            thoughtSignature: recordedSignature(name),
          },
        },
      ]);
      const usage = JSON.parse(fixture(name).at(-1)!).usageMetadata;
      expect(message.usage).toEqual({
        inputTokens: usage.promptTokenCount,
        outputTokens: usage.candidatesTokenCount + usage.thoughtsTokenCount,
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
        reasoningTokens: usage.thoughtsTokenCount,
      });
    },
  );

  it.each(["google-tool-call", "google-tool-call-gemini3"])(
    "%s: the call runs, and its signature goes back on its functionCall part byte for byte",
    async (name) => {
      const server = await serve([played(name), { text: "It is sunny." }]);
      const seen: unknown[] = [];
      const weather = tool(
        "weather",
        "The weather in a place",
        z.object({ location: z.string() }),
        async (input) => {
          seen.push(input);
          return "sunny";
        },
      );
      const agent = createBareAgent({ model: make(server.url), tools: [weather] });
      const result = await agent.run("weather in SF?");
      expect(result).toMatchObject({ subtype: "success", result: "It is sunny." });
      expect(seen).toEqual([{ location: "San Francisco" }]);
      const second = bodies(server)[1];
      expect(second.contents[1]).toEqual({
        role: "model",
        parts: [
          {
            functionCall: { name: "weather", args: { location: "San Francisco" } },
            thoughtSignature: recordedSignature(name),
          },
        ],
      });
      expect(second.contents[2]).toEqual({
        role: "user",
        parts: [{ functionResponse: { name: "weather", response: { output: "sunny" } } }],
      });
    },
  );

  it("a prompt refused with promptFeedback.blockReason is a ContentFilterError naming it", async () => {
    const server = await serve([played("issue-19758-prompt-block")]);
    const error = await streamModel(make(server.url)).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ContentFilterError);
    expect((error as ContentFilterError).reason).toBe("PROHIBITED_CONTENT");
    expect((error as Error).message).toMatch(/blockReason PROHIBITED_CONTENT/);
    // Not retried: the same prompt gets the same refusal.
    expect(server.requests).toHaveLength(1);
  });
});

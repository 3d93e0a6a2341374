/**
 * A body that the abort does not error (a user's fetch, a proxy's stream): the idle limit still
 * ends the wait. The attempt's read waits for the body or for its own abort, whichever comes first.
 */
import { createBareAgent, openai } from "skein";
import { describe, expect, it } from "vitest";

const chunk = (text: string) =>
  `data: ${JSON.stringify({
    id: "c1",
    object: "chat.completion.chunk",
    created: 0,
    model: "gpt-4o",
    choices: [{ index: 0, delta: { role: "assistant", content: text }, finish_reason: null }],
  })}\n\n`;

/** A fetch whose body sends one chunk and then never ends, whatever the request's signal says. */
const deafFetch: typeof fetch = async () => {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(chunk("partial ")));
      // Never closed, never errored: only the attempt's own abort can end a read of it.
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
};

describe("a stalled body the abort does not reach", () => {
  it("ends with the idle timeout, keeping the text", async () => {
    const model = openai({
      baseURL: "http://127.0.0.1:9/v1",
      apiKey: "test",
      model: "gpt-4o",
      fetch: deafFetch,
      idleTimeoutMs: 100,
      maxRetries: 0,
    });
    const result = await createBareAgent({ model }).run("go");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error).toMatchObject({
      name: "APITimeoutError",
      message: "The model API sent nothing for 100 ms.",
    });
    expect(result.messages.at(-1)).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "partial " }],
      incomplete: true,
    });
  }, 120_000);
});

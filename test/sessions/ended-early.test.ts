// A run that ends early in its session (D10): aborted after its cancelled results, or with a reply
// cut mid-stream. The session stays idle and whole, and the next run's request is valid.
import { anthropic, createBareAgent, loadSession, memoryStore, tool } from "skein";
import { mockServer, scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { rejectionOf } from "../support/promises.ts";
import { expectValidTranscript } from "../support/results.ts";

describe("an aborted run", () => {
  it("ends in the log after its cancelled results: the session is idle and the next request valid", async () => {
    const store = memoryStore();
    const controller = new AbortController();
    const waits = tool("waits", "Waits until aborted.", z.object({}), async (_, ctx) => {
      controller.abort();
      if (!ctx.signal.aborted)
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      return "never";
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "w1", name: "waits", input: {} }] },
      { text: "Fresh start." },
    ]);
    const agent = createBareAgent({ model, tools: [waits], sessionStore: store });
    const error = await rejectionOf(
      agent.run("wait", { sessionId: "aborted", signal: controller.signal }),
    );
    expect(error.name).toBe("AbortError");
    const loaded = await loadSession(store, "aborted");
    expect(loaded?.status).toBe("idle");
    expectValidTranscript(loaded!.messages);
    expect((await agent.run("again", { sessionId: "aborted" })).result).toBe("Fresh start.");
    expectValidTranscript(model.requests[1]!.messages);
  });
});

describe("a reply cut mid-stream (D10)", () => {
  it("is kept marked incomplete, sent as partial text once: the next run's request is valid", async () => {
    const server = await mockServer({
      script: [
        { text: "Half of an answer that never ends", cutAfter: 6 },
        { text: "Whole answer." },
      ],
    });
    try {
      const store = memoryStore();
      const agent = createBareAgent({
        model: anthropic({ baseURL: server.url, apiKey: "test", maxRetries: 0 }),
        sessionStore: store,
      });
      const cut = await agent.run("first question", { sessionId: "cut" });
      expect(cut.subtype).toBe("error_during_execution");
      const loaded = await loadSession(store, "cut");
      expect(loaded?.status).toBe("idle");
      expect(loaded?.messages.at(-1)).toMatchObject({ role: "assistant", incomplete: true });

      const next = await agent.run("second question", { sessionId: "cut" });
      expect(next.subtype).toBe("success");
      expect(next.result).toBe("Whole answer.");
      // The mock refuses (400) what the real API would: every request reached the script.
      const calls = server.requests.filter((request) => request.path.startsWith("/v1/messages"));
      expect(calls.map((request) => request.turn)).toEqual([0, 1]);
      // The partial text is kept as what the model said (its marker stripped at the edge), once.
      const sent = calls[1]!.body.messages as { role: string; content: unknown }[];
      expect(sent.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
      expect(sent[1]!.content).toEqual([
        { type: "text", text: (loaded!.messages.at(-1)!.content as { text: string }[])[0]!.text },
      ]);
      expect(JSON.stringify(sent)).toContain("second question");
    } finally {
      await server.close();
    }
  });
});

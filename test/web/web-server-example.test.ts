// docs/web.md's server (examples/docs/web-server.ts), run as written against a mock Anthropic
// server: a chat from useChat's client asks, is approved, and gets its answer.
import type { AddressInfo } from "node:net";
import { afterAll, expect, it, vi } from "vitest";
import { closeMockServers, closeServer, openMockServer } from "../support/servers.ts";
import { TestChat } from "./chat-client.ts";

afterAll(closeMockServers);

it("serves a chat whose deploy the page approves", async () => {
  const mock = await openMockServer({
    script: [
      { toolCalls: [{ id: "toolu_1", name: "deploy", input: { service: "api" } }] },
      { text: "api is deployed." },
    ],
  });
  vi.stubEnv("ANTHROPIC_BASE_URL", mock.url);
  vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test");
  vi.stubEnv("PORT", "0");
  try {
    const { server } = await import("../../examples/docs/web-server.ts");
    if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const chat = new TestChat("docs-chat", (request) => fetch(request), {
        api: `http://127.0.0.1:${port}/api/chat`,
      });
      await chat.sendMessage({ text: "Deploy api" });
      const [pending] = chat.pendingApprovals();
      expect(pending?.toolCallId).toBe("toolu_1");
      await chat.addToolApprovalResponse({ id: pending!.id, approved: true });
      await chat.sendMessage();
      expect(chat.error).toBeUndefined();
      const part = chat.messages.at(-1)!.parts.find((each: any) => each.toolCallId === "toolu_1");
      expect(part).toMatchObject({ state: "output-available", output: "Deployed api." });
      expect(chat.text()).toBe("api is deployed.");
    } finally {
      server.closeAllConnections();
      await closeServer(server);
    }
  } finally {
    vi.unstubAllEnvs();
  }
});

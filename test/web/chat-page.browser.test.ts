// The chat page (examples/web: useChat from @ai-sdk/react, bundled by esbuild) in Debian's
// chromium, served against chatHandler: a message streams in, an approval button appears and
// clicking it runs the tool, a reload mid-stream resumes to the same final message, a second chat
// id is isolated, and HTML in tool output stays text.
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { build } from "esbuild";
import {
  createBareAgent,
  type Model,
  type ModelRequest,
  type ModelStreamEvent,
  memoryStore,
  tool,
} from "skein";
import { chatHandler, toNodeHandler } from "skein/web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ROOT } from "../readme-blocks.ts";
import { useBrowser } from "../support/browser.ts";
import { closeServer, listenLocal } from "../support/servers.ts";

const browser = useBrowser();
const counter = { deploys: 0 };
const store = memoryStore();

/** Releases the words of a "count" reply one by one, as the test says. */
const gate = (() => {
  let released = 0;
  let wake: (() => void) | undefined;
  return {
    async until(index: number) {
      while (released <= index) await new Promise<void>((resolve) => (wake = resolve));
    },
    step(count: number) {
      released += count;
      wake?.();
    },
  };
})();

const WORDS = ["one ", "two ", "three ", "four."];

function lastUserText(request: ModelRequest): { text: string; afterTool: boolean } {
  const last = request.messages.at(-1)!;
  if (typeof last.content === "string") return { text: last.content, afterTool: false };
  const afterTool = last.content.some((block) => block.type === "tool_result");
  const text = last.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  return { text, afterTool };
}

const reply = (text: string): ModelStreamEvent => ({
  type: "message",
  message: { role: "assistant", content: [{ type: "text", text }] },
  stopReason: "end_turn",
});

/** The model: "deploy" asks for the deploy tool, "count" streams gated words, "html" calls a tool that returns markup, anything else is echoed. */
const model: Model = {
  provider: "test",
  modelId: "page",
  async *stream(request): AsyncGenerator<ModelStreamEvent> {
    const { text, afterTool } = lastUserText(request);
    if (afterTool) {
      const done = "Deployment finished.";
      yield { type: "text_delta", text: done };
      yield reply(done);
      return;
    }
    const call = (name: string, input: unknown): ModelStreamEvent[] => {
      const block = { type: "tool_use" as const, id: `call-${name}`, name, input };
      return [
        { type: "tool_call", id: block.id, name, input },
        {
          type: "message",
          message: { role: "assistant", content: [block] },
          stopReason: "tool_use",
        },
      ];
    };
    if (text.includes("deploy")) {
      yield* call("deploy", { service: "api" });
      return;
    }
    if (text.includes("html")) {
      yield* call("fetch_page", {});
      return;
    }
    if (text.includes("count")) {
      for (const [index, word] of WORDS.entries()) {
        await gate.until(index);
        yield { type: "text_delta", text: word };
      }
      yield reply(WORDS.join(""));
      return;
    }
    // Who said what before, from the history the store gave the model.
    const said = request.messages.length;
    for (const word of ["You ", "said: ", text, ` (${said} messages)`])
      yield { type: "text_delta", text: word };
    yield reply(`You said: ${text} (${said} messages)`);
  },
};

const agent = createBareAgent({
  model,
  tools: [
    tool("deploy", "Deploys", z.object({ service: z.string() }), async ({ service }) => {
      counter.deploys++;
      return `deployed ${service}`;
    }),
    tool(
      "fetch_page",
      "Fetches a page",
      z.object({}),
      async () => '<img src=x onerror="window.pwned=1"><b id="bold">bold</b>',
    ),
  ],
  permissions: { ask: ["deploy"] },
  sessionStore: store,
  approvalSecret: "browser-test-approval-secret",
});
const handler = toNodeHandler(chatHandler({ agent, sessionStore: store }));

let bundle = "";
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>skein chat</title><style>
body{font:15px/1.5 system-ui,sans-serif;max-width:640px;margin:24px auto;color:#222}
.user p{background:#eef;padding:6px 10px;border-radius:8px;display:inline-block;margin:4px 0}
.assistant p{margin:4px 0}
pre{background:#f6f6f6;padding:6px 10px;border-radius:6px;margin:4px 0}
button{margin-left:6px}
input{width:100%;padding:8px;font:inherit;margin-top:12px;box-sizing:border-box}
</style></head><body><div id="root"></div><script type="module" src="/app.js"></script></body></html>`;

const server = createServer((req, res) => {
  if (req.url?.startsWith("/api/chat")) return void handler(req, res);
  if (req.url === "/app.js") {
    res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" });
    return void res.end(bundle);
  }
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  res.end(PAGE);
});
let base = "";

beforeAll(async () => {
  const built = await build({
    absWorkingDir: ROOT,
    entryPoints: ["examples/web/main.tsx"],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    tsconfig: "examples/web/tsconfig.json",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
  });
  bundle = built.outputFiles[0]!.text;
  base = `http://127.0.0.1:${await listenLocal(server)}`;
}, 120_000);
afterAll(async () => {
  server.closeAllConnections();
  await closeServer(server);
});

const assistantText = (page: import("playwright-core").Page) =>
  page.locator(".assistant").last().innerText();

describe("the useChat page against chatHandler in chromium", () => {
  it("a message streams in; an approval button appears, and clicking it runs the tool and the answer arrives", async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/?chat=page-1`);
    await page.getByPlaceholder("Ask").fill("hello");
    await page.getByPlaceholder("Ask").press("Enter");
    await expect
      .poll(() => assistantText(page), { timeout: 60_000 })
      .toBe("You said: hello (1 messages)");

    await page.getByPlaceholder("Ask").fill("please deploy");
    await page.getByPlaceholder("Ask").press("Enter");
    const approve = page.getByRole("button", { name: "Approve" });
    await approve.waitFor({ timeout: 60_000 });
    expect(counter.deploys).toBe(0);
    // `SKEIN_SCREENSHOTS=1 npm run test:heavy` retakes docs/web-chat.png, the guide's picture.
    if (process.env.SKEIN_SCREENSHOTS) {
      await page.setViewportSize({ width: 720, height: 250 });
      writeFileSync(path.join(ROOT, "docs/web-chat.png"), await page.screenshot());
    }
    await approve.click();
    await expect
      .poll(() => assistantText(page), { timeout: 60_000 })
      .toContain("Deployment finished.");
    expect(await assistantText(page)).toContain("deploy: deployed api");
    expect(counter.deploys).toBe(1);
    await expect.poll(() => page.getByRole("button", { name: "Approve" }).count()).toBe(0);
  });

  it("a reload mid-stream resumes to the same final message", async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/?chat=page-reload`);
    await page.getByPlaceholder("Ask").fill("count");
    await page.getByPlaceholder("Ask").press("Enter");
    gate.step(2);
    await expect.poll(() => assistantText(page), { timeout: 60_000 }).toBe("one two");
    await page.reload();
    // The reloaded page reconnects (GET .../page-reload/stream) and replays from the start.
    await expect.poll(() => assistantText(page), { timeout: 60_000 }).toBe("one two");
    gate.step(2);
    await expect.poll(() => assistantText(page), { timeout: 60_000 }).toBe("one two three four.");
    // The same final message the store holds for an uninterrupted stream.
    const log = (await store.read("page-reload")).map((row) => JSON.parse(row.data));
    const reply = log.find((entry) => entry.type === "reply");
    expect(reply.message.content[0].text).toBe("one two three four.");
  });

  it("a second chat id is isolated", async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/?chat=page-2`);
    await page.getByPlaceholder("Ask").fill("hello again");
    await page.getByPlaceholder("Ask").press("Enter");
    // The model saw this chat's one message, not page-1's history.
    await expect
      .poll(() => assistantText(page), { timeout: 60_000 })
      .toBe("You said: hello again (1 messages)");
    expect(await page.locator(".user").count()).toBe(1);
    expect(JSON.stringify(await store.read("page-2"))).not.toContain("please deploy");
  });

  it("HTML in tool output is shown as text, never run", async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/?chat=page-html`);
    await page.getByPlaceholder("Ask").fill("html please");
    await page.getByPlaceholder("Ask").press("Enter");
    await expect
      .poll(() => page.locator("pre").first().innerText(), { timeout: 60_000 })
      .toContain('<img src=x onerror="window.pwned=1">');
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.locator("#bold").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined();
  });
});

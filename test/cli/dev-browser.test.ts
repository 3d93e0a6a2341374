/**
 * `skein dev` in a real browser (Debian's chromium through playwright-core): the page lists a
 * project's sessions, shows a paused run's waiting call, approves it, and the run finishes while
 * the page watches; HTML planted in a session's prompt, the model's text and a tool's output is
 * shown as text and never runs. With SKEIN_UPDATE_SCREENSHOTS=1 the screenshot for the guide is
 * written to docs/inspector.png.
 */
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { anthropic, createAgent, tool } from "skein";
import { sqliteStore } from "skein/sqlite";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { useBrowser } from "../support/browser.ts";
import { LIVENESS_MS } from "../support/liveness.ts";
import { type CliProcess, ROOT, startCli } from "./helpers.ts";

const SECRET = "dev-inspector-browser-secret-0123456789";
const HOSTILE = `<img src=x onerror="window.pwned=1;document.title='pwned'"><script>window.pwned=1</script>`;

const browser = useBrowser();
let cwd: string;
let server: MockServer;
let dev: CliProcess;
let address: string;

beforeAll(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), "skein-dev-browser-"));
  await mkdir(path.join(cwd, ".skein"), { mode: 0o700 });
  await writeFile(path.join(cwd, ".skein", "approval-secret"), `${SECRET}\n`, { mode: 0o600 });
  await chmod(path.join(cwd, ".skein", "approval-secret"), 0o600);
  server = await mockServer({
    script: ({ body, index }) => {
      const first = JSON.stringify(body.messages[0]);
      if (first.includes("planted")) {
        return index === 0
          ? { toolCalls: [{ id: "e1", name: "echo", input: { text: HOSTILE } }] }
          : { text: `The page said ${HOSTILE}` };
      }
      if (index === 0)
        return {
          text: "I'll write the greeting.",
          toolCalls: [
            { id: "w1", name: "Write", input: { file_path: "hello.txt", content: "hello\n" } },
          ],
        };
      return { text: "Wrote hello.txt." };
    },
  });
  const store = sqliteStore({ path: path.join(cwd, ".skein", "sessions.db") });
  const echo = tool(
    "echo",
    "Echoes text.",
    z.object({ text: z.string() }),
    ({ text }) => `echo: ${text}`,
  );
  const agent = createAgent({
    model: anthropic({ baseURL: server.url, apiKey: "test-key" }),
    sessionStore: store,
    approvalSecret: SECRET,
    cwd,
    tools: [echo],
  });
  const planted = await agent.run(`planted ${HOSTILE}`, { sessionId: "planted-html" });
  expect(planted.subtype).toBe("success");
  const paused = await agent.run("write a greeting to hello.txt", { sessionId: "greeting" });
  expect(paused.subtype).toBe("paused");
  await agent.close();
  await store.close();
  dev = startCli(["dev"], {
    cwd,
    env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
  });
  await dev.waitFor("stdout", "\n");
  address = /skein dev: (\S+)/.exec(dev.stdout)![1]!;
}, LIVENESS_MS * 2);

afterAll(async () => {
  dev?.child.kill("SIGINT");
  await dev?.exited;
  await server?.close();
  await rm(cwd, { recursive: true, force: true });
});

describe("skein dev in a browser", () => {
  it("lists the sessions, approves a paused run, and shows it finish", async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.goto(address);
    const row = page.locator('[data-testid=session-row][data-session-id="greeting"]');
    await row.waitFor();
    await expect.poll(() => row.getAttribute("data-status")).toBe("paused");
    await row.click();
    const pending = page.locator("[data-testid=pending-call]");
    await pending.waitFor();
    expect(await pending.getAttribute("data-call-id")).toBe("w1");
    expect(await pending.textContent()).toContain("hello.txt");
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(false);

    await page.locator("[data-testid=approve]").click();
    const status = page.locator("[data-testid=run-status]");
    await page.locator("[data-testid=answer]").waitFor({ timeout: LIVENESS_MS });
    expect(await status.textContent()).toBe("success");
    expect(await page.locator("[data-testid=answer]").textContent()).toContain("Wrote hello.txt.");
    expect(readFileSync(path.join(cwd, "hello.txt"), "utf8")).toBe("hello\n");
    await expect.poll(() => row.getAttribute("data-status"), { timeout: LIVENESS_MS }).toBe("idle");
    // The call, done, with its result and the time the inspector measured.
    const call = page.locator('[data-testid=call][data-call-id="w1"]');
    expect(await call.textContent()).toMatch(/done · \d/);

    const shot = process.env.SKEIN_UPDATE_SCREENSHOTS
      ? path.join(ROOT, "docs", "inspector.png")
      : path.join(cwd, "inspector.png");
    await call.evaluate((element) => {
      (element as unknown as { open: boolean }).open = true;
    });
    await page.screenshot({ path: shot });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe("PNG");
  });

  it("shows a rewind's diff first, then rewinds; forks into a new session", async () => {
    const page = await browser.newPage();
    await page.goto(`${address}#session=greeting`);
    await page.locator("[data-testid=rewind]").click();
    const file = page.locator("[data-testid=rewind-file]");
    await file.waitFor();
    expect(await file.textContent()).toContain("hello.txt");
    expect(await file.textContent()).toContain("-hello");
    // Shown, not done: the file is still there until Rewind is clicked.
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(true);
    await page.locator("[data-testid=rewind-confirm]").click();
    await page.getByText("Rewound: hello.txt (removed).").waitFor();
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(false);

    await page.locator("[data-testid=fork-session]").click();
    await page.getByText(/^Forked into /).waitFor();
    const forkedId = await page.locator("[data-testid=session-id]").textContent();
    expect(forkedId).not.toBe("greeting");
    await page.locator(`[data-testid=session-row][data-session-id="${forkedId}"]`).waitFor();
    expect(await page.locator("[data-testid=prompt]").textContent()).toBe(
      "write a greeting to hello.txt",
    );
  });

  it("shows planted HTML as text: no element is made from it and no script runs", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${address}#session=planted-html`);
    const prompt = page.locator("[data-testid=prompt]");
    await prompt.waitFor();
    expect(await prompt.textContent()).toBe(`planted ${HOSTILE}`);
    await page.locator('[data-testid=call][data-call-id="e1"] summary').click();
    const result = page.locator("[data-testid=call-result]");
    expect(await result.textContent()).toBe(`echo: ${HOSTILE}`);
    // The input as JSON, its quotes escaped as JSON escapes them.
    expect(await page.locator("[data-testid=call-input]").textContent()).toContain(
      "<img src=x onerror=",
    );
    expect(await page.locator("[data-testid=answer]").textContent()).toContain(HOSTILE);
    // The session list shows the prompt too.
    expect(await page.locator("[data-testid=sessions]").textContent()).toContain(HOSTILE);
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.locator("body script").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.title()).toBe("skein dev");
    expect(errors).toEqual([]);
  });

  it("refuses the page without the token", async () => {
    const page = await browser.newPage();
    const response = await page.goto(address.replace(/\?token=.*/, ""));
    expect(response?.status()).toBe(401);
  });
});

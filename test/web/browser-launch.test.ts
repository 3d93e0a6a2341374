// The shared browser helper (test/support/browser.ts): Debian's chromium starts through
// playwright-core's executablePath, loads a page from 127.0.0.1 and runs its script.
import { createServer } from "node:http";
import { afterAll, expect, test } from "vitest";
import { useBrowser } from "../support/browser.ts";
import { closeServer, listenLocal } from "../support/servers.ts";

const browser = useBrowser();
const server = createServer((_request, response) => {
  response.setHeader("content-type", "text/html; charset=utf-8");
  response.end(
    `<!doctype html><button id="b">go</button><p id="out"></p><script>document.getElementById("b").onclick=()=>{document.getElementById("out").textContent="clicked"}</script>`,
  );
});
afterAll(() => closeServer(server));

test("chromium loads a local page and runs its script", async () => {
  const port = await listenLocal(server);
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.click("#b");
  await expect.poll(() => page.textContent("#out"), { timeout: 60_000 }).toBe("clicked");
});

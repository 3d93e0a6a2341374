/**
 * A real browser for tests: Debian's `chromium` driven by playwright-core through its
 * `executablePath` (no browser is ever downloaded). `.ci/run` installs the package when missing.
 *
 * `useBrowser()` starts one browser for the tests of a file (or a describe block) and closes it
 * after them; each test opens its own context (`newPage`), so cookies and storage never leak
 * between tests.
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

const NAMES = ["chromium", "chromium-browser"];

/** The chromium executable: `SKEIN_CHROMIUM` when set, else `chromium` found on the PATH. */
export function chromiumPath(): string {
  const chosen = process.env.SKEIN_CHROMIUM;
  if (chosen) return chosen;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    for (const name of NAMES) {
      const candidate = join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // not here
      }
    }
  }
  throw new Error(
    "No chromium found on the PATH: install Debian's package (apt-get install -y chromium), or set SKEIN_CHROMIUM to a Chromium executable. The browser tests drive a real browser.",
  );
}

/** Launches headless chromium. As root, Chromium's own sandbox cannot start: it is turned off. */
export function launchBrowser(): Promise<Browser> {
  const args = ["--disable-dev-shm-usage", "--disable-gpu"];
  if (process.getuid?.() === 0) args.push("--no-sandbox");
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args, timeout: 60_000 });
}

export interface BrowserHandle {
  browser(): Browser;
  /** A fresh context and page; closed after the tests with the browser. */
  newPage(): Promise<Page>;
}

/** One browser for the tests of a file: launched before them, closed after them. */
export function useBrowser(): BrowserHandle {
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled(contexts.map((context) => context.close()));
    await browser?.close();
  }, 120_000);
  const get = () => {
    if (!browser) throw new Error("the browser is not running (use it inside a test)");
    return browser;
  };
  return {
    browser: get,
    async newPage() {
      const context = await get().newContext();
      contexts.push(context);
      context.setDefaultTimeout(60_000);
      return context.newPage();
    },
  };
}

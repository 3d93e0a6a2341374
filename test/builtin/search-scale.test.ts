/**
 * Glob and LS over a workspace of 100,000 files (the heavy project: making the files is most of
 * the cost). The limit is a liveness limit, never speed: speed is `npm run bench`.
 */
import * as fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { type Fixture, invoke, makeFixture } from "./harness.ts";

let fx: Fixture;
beforeEach(() => {
  fx = makeFixture();
});
afterEach(() => fx.cleanup());

describe("Glob", () => {
  it(
    "caps at 100 results, newest first, and handles 100,000 files",
    async () => {
      // 100 directories of 1,000 empty files, with one file made newest.
      for (let d = 0; d < 100; d += 1) {
        const dir = path.join(fx.root, `d${d}`);
        fs.mkdirSync(dir);
        for (let f = 0; f < 1000; f += 1) fs.writeFileSync(path.join(dir, `f${f}.txt`), "");
      }
      const future = new Date(Date.now() + 60_000);
      fs.utimesSync(path.join(fx.root, "d42/f7.txt"), future, future);
      const started = Date.now();
      const result = await invoke(fx.tools.Glob, { pattern: "**/*.txt" });
      const elapsed = Date.now() - started;
      const lines = result.text.split("\n");
      expect(lines[0]).toBe("d42/f7.txt");
      expect(lines.filter((line) => line.endsWith(".txt"))).toHaveLength(100);
      expect(result.text).toContain(
        "[Showing the 100 most recently modified of 100000 matches. Use a more specific pattern or path to narrow down.]",
      );
      expect(elapsed).toBeLessThan(LIVENESS_MS);
      const ls = await invoke(fx.tools.LS, { path: "d5" });
      expect(ls.text.split("\n")).toHaveLength(1000);
      const root = await invoke(fx.tools.LS, { path: "." });
      expect(root.text.split("\n")).toHaveLength(100);
    },
    4 * LIVENESS_MS,
  );
});

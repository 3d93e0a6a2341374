/**
 * Scale attacks through the public API: a catastrophic-backtracking pattern, a 1 GB sparse file,
 * and a workspace of 100,000 files. Each must answer, with capped results and a note saying so.
 * Read-only tools: the preset changes nothing for them, but both are run. The limits here are
 * liveness limits (a hang, a whole-file read, quadratic work), never speed: speed is `npm run bench`.
 */
import * as fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { type Arena, attack, expectError, expectOk, makeArena, PRESETS, turn } from "./helpers.ts";

describe.each(PRESETS)("scale ($label)", ({ preset }) => {
  let arena: Arena;
  beforeAll(() => {
    arena = makeArena("scale");
    arena.put("redos.txt", `${"a".repeat(100_000)}b\n`);
    // 1 GB sparse: text at the start, a hole, text at the end.
    const big = arena.put("huge.log", "");
    // More than 8 KiB of text, so the binary sniff sees text; more lines than one Read shows.
    const head = Array.from({ length: 3000 }, (_, i) => `head line ${i + 1}`).join("\n");
    fs.writeFileSync(big, `${head}\n`);
    fs.truncateSync(big, 1024 ** 3);
    const fd = fs.openSync(big, "r+");
    fs.writeSync(fd, "\nneedle at the end\n", 1024 ** 3 - 100);
    fs.closeSync(fd);
  });
  afterAll(() => arena.cleanup());

  it(
    "Grep (a+)+$ over a 100,000-character line of a's ending in b",
    async () => {
      const run = await attack(arena, {
        preset,
        deadlineMs: LIVENESS_MS,
        turns: [
          turn(
            ["g1", "Grep", { pattern: "(a+)+$", path: "redos.txt", output_mode: "content" }],
            ["g2", "Grep", { pattern: "(a|aa)+$", path: "redos.txt", output_mode: "count" }],
            ["g3", "Grep", { pattern: "(a+)+b", path: "redos.txt", output_mode: "content" }],
          ),
        ],
      });
      // "$" matches at the end of the line, after the b: the a's do not match.
      expectOk(run, "g1");
      expectOk(run, "g2");
      // A match on a 100,000-character line is cut, not returned whole.
      expectOk(run, "g3");
      expect(run.text("g3").length).toBeLessThan(10_000);
    },
    2 * LIVENESS_MS,
  );

  it(
    "a 1 GB sparse file: Grep and Read with offset/limit answer",
    async () => {
      const run = await attack(arena, {
        preset,
        deadlineMs: LIVENESS_MS,
        turns: [
          turn(
            ["g1", "Grep", { pattern: "needle", path: "huge.log", output_mode: "content" }],
            ["g2", "Grep", { pattern: "needle" }],
            ["r1", "Read", { file_path: "huge.log", offset: 10, limit: 5 }],
            ["r2", "Read", { file_path: "huge.log" }],
            ["r3", "Read", { file_path: "huge.log", offset: 99, limit: 3 }],
          ),
        ],
      });
      for (const id of ["g1", "g2"]) expect(run.call(id), id).toBeDefined();
      expectOk(run, "r1", /head line 10$/m);
      expect(run.text("r1")).not.toMatch(/head line 15$/m);
      if (!run.call("r2").isError) expect(run.text("r2")).toMatch(/head line 1$/m);
      if (!run.call("r3").isError) expect(run.text("r3")).toMatch(/head line 99$/m);
    },
    2 * LIVENESS_MS,
  );
});

describe("100,000 files in 100 directories", () => {
  let arena: Arena;
  const FILES = 100_000;
  beforeAll(() => {
    arena = makeArena("many");
    // Directory 0 holds 5,000 files (over LS's cap); the other 99 share the rest.
    let made = 0;
    for (let d = 0; d < 100; d++) {
      const dir = path.join(arena.work, "tree", `d${String(d).padStart(2, "0")}`);
      fs.mkdirSync(dir, { recursive: true });
      const count =
        d === 0 ? 5_000 : Math.floor((FILES - 5_000) / 99) + (d <= (FILES - 5_000) % 99 ? 1 : 0);
      for (let i = 0; i < count; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), "x\n");
      made += count;
    }
    expect(made).toBe(FILES);
  }, 120_000);
  afterAll(() => arena.cleanup(), 120_000);

  it.each(PRESETS)(
    "Glob and LS return capped results with a note ($label)",
    async ({ preset }) => {
      const run = await attack(arena, {
        preset,
        deadlineMs: 60_000,
        turns: [
          turn(
            ["gl1", "Glob", { pattern: "**/*" }],
            ["gl2", "Glob", { pattern: "tree/**/*.txt" }],
            ["l1", "LS", { path: "tree/d00" }],
            ["l2", "LS", { path: "tree" }],
            ["g1", "Grep", { pattern: "x" }],
          ),
        ],
      });
      for (const id of ["gl1", "gl2"]) {
        expectOk(run, id);
        const lines = run
          .text(id)
          .split("\n")
          .filter((line) => line.startsWith("tree/"));
        expect(lines.length, id).toBeLessThanOrEqual(100);
        expect(run.text(id)).toMatch(/100,?000|more|narrow/i);
      }
      expectOk(run, "l1");
      expect(
        run
          .text("l1")
          .split("\n")
          .filter((line) => /^f\d+\.txt$/.test(line)).length,
      ).toBeLessThanOrEqual(1000);
      expect(run.text("l1")).toMatch(/more entries not shown/);
      expectOk(run, "l2", /d99\//);
      expectOk(run, "g1");
      expect(run.text("g1")).toMatch(/more exist|head_limit|narrow/i);
    },
    120_000,
  );
});

describe("a pattern or path as large as the model likes", () => {
  let arena: Arena;
  beforeAll(() => {
    arena = makeArena("big-input");
  });
  afterAll(() => arena.cleanup());

  // A long path is resolved component by component, in time linear in its length: work quadratic
  // in it took seconds at 20,000 characters and would take minutes at 200,000, past the liveness
  // limit. (The work is synchronous, so a deadline cannot stop it: the time is checked after.)
  it(
    "a 200,000-character path, a 10,000-brace glob and a 10,000-paren regex are answered, echoed short",
    async () => {
      const long = "a/".repeat(100_000);
      const started = Date.now();
      const run = await attack(arena, {
        turns: [
          turn(
            ["r1", "Read", { file_path: long }],
            ["g1", "Glob", { pattern: "{a,b}".repeat(2_000) }],
            ["g2", "Grep", { pattern: "(".repeat(10_000) }],
          ),
        ],
      });
      const elapsed = Date.now() - started;
      expectError(run, "r1");
      expectError(run, "g2", /regular expression/i);
      for (const id of ["r1", "g1", "g2"]) expect(run.text(id).length, id).toBeLessThan(5_000);
      expect(elapsed, "Read, Glob and Grep of oversized inputs").toBeLessThan(LIVENESS_MS);
    },
    2 * LIVENESS_MS,
  );
});

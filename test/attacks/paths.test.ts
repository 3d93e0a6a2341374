/**
 * Path confinement through the public API: C1 (escapes by `..` and absolute paths), C2 (the
 * sibling with a shared prefix), C4 (special and huge files), C5 (globs and searches that climb).
 */
import * as fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import {
  type Arena,
  approveAll,
  attack,
  expectError,
  expectOk,
  makeArena,
  mkfifo,
  PRESETS,
  turn,
} from "./helpers.ts";

const OUTSIDE = /outside the workspace/;

describe.each(PRESETS)("paths ($label)", ({ preset }) => {
  let arena: Arena;
  beforeAll(() => {
    arena = makeArena("paths");
  });
  afterAll(() => arena.cleanup());

  describe("C1: .. and absolute paths", () => {
    it("Read of ../../etc/passwd and /etc/passwd, Write of a/../../x: refused without the host path", async () => {
      const run = await attack(arena, {
        preset,
        approval: approveAll,
        turns: [
          turn(
            ["r1", "Read", { file_path: "../../etc/passwd" }],
            ["r2", "Read", { file_path: "/etc/passwd" }],
            ["r3", "Read", { file_path: "../outside/../../../../etc/shadow" }],
          ),
          turn(["w1", "Write", { file_path: "a/../../x", content: "pwned" }]),
        ],
      });
      for (const id of ["r1", "r2", "r3", "w1"]) expectError(run, id, OUTSIDE);
      // No password file content, and no resolved host path the model did not type.
      expect(run.text("r2")).not.toMatch(/root:.*:0:0:/);
      expect(run.text("r1")).not.toContain(path.resolve(arena.work, "../../etc/passwd"));
      expect(run.text("w1")).not.toContain(path.resolve(arena.work, "a/../../x"));
      expect(fs.existsSync(path.join(arena.parent, "x"))).toBe(false);
    });

    it("an absolute path inside the workspace and a/../b are allowed", async () => {
      const run = await attack(arena, {
        preset,
        approval: approveAll,
        turns: [
          turn(
            ["r1", "Read", { file_path: path.join(arena.work, "README.md") }],
            ["r2", "Read", { file_path: "a/../README.md" }],
            ["r3", "Read", { file_path: `${arena.work}/src/../README.md` }],
          ),
          turn(["w1", "Write", { file_path: "a/../b-c1.txt", content: "inside" }]),
        ],
      });
      for (const id of ["r1", "r2", "r3"]) expectOk(run, id, /hello from the workspace/);
      expectOk(run, "w1");
      expect(fs.readFileSync(path.join(arena.work, "b-c1.txt"), "utf8")).toBe("inside");
    });

    it("a path with a NUL byte or an empty name is refused, not probed", async () => {
      const run = await attack(arena, {
        preset,
        approval: approveAll,
        turns: [
          turn(
            ["r1", "Read", { file_path: "README.md\u0000/../../../etc/passwd" }],
            ["r2", "Read", { file_path: "" }],
          ),
        ],
      });
      expectError(run, "r1");
      expectError(run, "r2");
    });
  });

  describe("C2: the sibling directory with a shared prefix", () => {
    it("work2/x by absolute path and by ../work2/x is refused, for every tool", async () => {
      const absolute = arena.siblingFile;
      const run = await attack(arena, {
        preset,
        approval: approveAll,
        turns: [
          turn(
            ["r1", "Read", { file_path: absolute }],
            ["r2", "Read", { file_path: "../work2/x" }],
            ["l1", "LS", { path: arena.work2 }],
            ["l2", "LS", { path: "../work2" }],
            ["g1", "Grep", { pattern: "KEY", path: "../work2" }],
            ["g2", "Grep", { pattern: "KEY", path: arena.work2, output_mode: "content" }],
            ["gl1", "Glob", { pattern: "*", path: "../work2" }],
            ["gl2", "Glob", { pattern: `${arena.work2}/*` }],
          ),
          turn(["w1", "Write", { file_path: "../work2/x", content: "pwned" }]),
          turn(["w2", "Write", { file_path: `${arena.work2}/new`, content: "pwned" }]),
          turn(["e1", "Edit", { file_path: "../work2/x", old_string: "KEY", new_string: "K" }]),
        ],
      });
      for (const id of ["r1", "r2", "l1", "l2", "g1", "g2", "gl1", "gl2", "w1", "w2", "e1"])
        expectError(run, id, OUTSIDE);
    });

    it("the workspace root itself, spelled with its own prefix, is still inside", async () => {
      const run = await attack(arena, {
        preset,
        turns: [
          turn(
            ["l1", "LS", { path: arena.work }],
            ["l2", "LS", { path: "../work" }],
            ["r1", "Read", { file_path: "../work/README.md" }],
          ),
        ],
      });
      expectOk(run, "l1", /README\.md/);
      expectOk(run, "l2", /README\.md/);
      expectOk(run, "r1", /hello from the workspace/);
    });
  });

  describe("C4: FIFOs, devices, directories and huge files", () => {
    // Opening a FIFO or reading /dev/zero would block or never end: the deadline catches that.
    it(
      "a FIFO, /dev/zero, /dev/stdin and a directory are refused without blocking",
      async () => {
        const fifo = path.join(arena.work, "c4-fifo");
        if (!fs.existsSync(fifo)) mkfifo(fifo);
        arena.link("c4-zero", "/dev/zero");
        arena.link("c4-stdin", "/dev/stdin");
        const run = await attack(arena, {
          preset,
          deadlineMs: LIVENESS_MS,
          turns: [
            turn(
              ["f1", "Read", { file_path: "c4-fifo" }],
              ["f2", "Grep", { pattern: "x", path: "c4-fifo" }],
              ["z1", "Read", { file_path: "/dev/zero" }],
              ["z2", "Read", { file_path: "c4-zero" }],
              ["z3", "Grep", { pattern: "x", path: "c4-zero" }],
              ["s1", "Read", { file_path: "/dev/stdin" }],
              ["s2", "Read", { file_path: "c4-stdin" }],
              ["d1", "Read", { file_path: "src" }],
              ["d2", "Read", { file_path: "." }],
            ),
            // A walk over a workspace holding a FIFO and device links does not block either.
            turn(
              ["w1", "Grep", { pattern: "zzz-no-match" }],
              ["w2", "Glob", { pattern: "**/*" }],
              ["w3", "LS", { path: "." }],
            ),
          ],
        });
        expectError(run, "f1", /not a regular file/);
        expectError(run, "f2", /not a regular file/);
        for (const id of ["z1", "s1"]) expectError(run, id, OUTSIDE);
        for (const id of ["z2", "z3", "s2"]) expectError(run, id, /outside the workspace|regular/);
        expectError(run, "d1", /is a directory/);
        expectError(run, "d2", /is a directory/);
        expectOk(run, "w1");
        expectOk(run, "w2");
        expectOk(run, "w3", /c4-fifo/);
      },
      2 * LIVENESS_MS,
    );

    // Text first (past the 8 KiB binary sniff), then a sparse hole up to 1 TiB: more lines than
    // one Read shows, or fewer, so the hole becomes one 1 TiB "line" that must not be read whole.
    // Reading it whole would take minutes, past the deadline; holding it, past the memory bound.
    it.each([
      { lines: 3000, what: "more lines than a Read shows" },
      { lines: 1000, what: "fewer lines than a Read shows" },
    ])(
      "a sparse 1 TiB file, $what first: head only, in bounded memory",
      async ({ lines }) => {
        const big = path.join(arena.work, `c4-big-${lines}.log`);
        onTestFinished(() => fs.rmSync(big, { force: true }));
        const head = Array.from({ length: lines }, (_, i) => `log line ${i + 1}`).join("\n");
        fs.writeFileSync(big, `${head}\n`);
        fs.truncateSync(big, 1024 ** 4);
        const rss = process.memoryUsage().rss;
        const run = await attack(arena, {
          preset,
          deadlineMs: LIVENESS_MS,
          turns: [
            turn(
              ["b1", "Read", { file_path: path.basename(big) }],
              ["b2", "Read", { file_path: path.basename(big), offset: 10, limit: 5 }],
            ),
          ],
        });
        const grown = process.memoryUsage().rss - rss;
        // Refused (over a size cap), or the head with a note.
        if (!run.call("b1").isError) {
          expect(run.text("b1")).toMatch(/log line 1\n|\tlog line 1$/m);
          expect(run.text("b1").length).toBeLessThan(300_000);
        }
        if (!run.call("b2").isError) {
          expect(run.text("b2")).toMatch(/log line 10$/m);
          expect(run.text("b2")).not.toMatch(/log line 9$/m);
          expect(run.text("b2")).not.toMatch(/log line 15$/m);
        }
        expect(grown, "RSS grew by more than 200 MB").toBeLessThan(200 * 1024 * 1024);
      },
      2 * LIVENESS_MS,
    );
  });

  describe("C5: globs and searches that climb", () => {
    it("Glob ../**, {..,src}/**, /etc/*, and Grep in ../ are rejected or confined", async () => {
      const run = await attack(arena, {
        preset,
        turns: [
          turn(
            ["g1", "Glob", { pattern: "../**" }],
            ["g2", "Glob", { pattern: "{..,src}/**" }],
            ["g3", "Glob", { pattern: "/etc/*" }],
            ["g4", "Glob", { pattern: "src/../../**" }],
            ["g5", "Glob", { pattern: "**/../../outside/**" }],
            ["g6", "Glob", { pattern: "@(..)/**" }],
            ["g7", "Glob", { pattern: "**", path: ".." }],
            ["g8", "Glob", { pattern: "../outside/*" }],
            ["s1", "Grep", { pattern: "KEY", path: "../" }],
            ["s2", "Grep", { pattern: "KEY", path: "/etc" }],
            ["s3", "Grep", { pattern: "KEY", glob: "../**", output_mode: "content" }],
            ["s4", "Grep", { pattern: "KEY", glob: "{..,src}/**", output_mode: "content" }],
            ["s5", "Grep", { pattern: "root", path: "/etc/passwd", output_mode: "content" }],
          ),
        ],
      });
      for (const id of ["g1", "g2", "g3", "g4", "g7", "g8", "s1", "s2", "s5"]) expectError(run, id);
      for (const id of ["g5", "g6", "s3", "s4"]) {
        // Rejected, or a result with nothing from outside (the leak check covers contents).
        if (run.call(id).isError) continue;
        expect(run.text(id)).not.toContain("outside/");
        expect(run.text(id)).not.toContain("work2");
      }
      expect(run.text("g3")).not.toContain("passwd");
    });
  });
});

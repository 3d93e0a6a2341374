/**
 * Symbolic links through the public API: C2 (links into the sibling and outside), C3 (live,
 * dangling, parent-directory links, loops, long chains), C5 (globs and searches meeting links),
 * and a link swapped in while writes run.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callText } from "../support/results.ts";
import {
  type Arena,
  approveAll,
  attack,
  type Call,
  exists,
  expectError,
  expectOk,
  makeArena,
  PRESETS,
  turn,
} from "./helpers.ts";

const REFUSED = /outside the workspace|symbolic link/;
const LOOP = /too many levels of symbolic links|symbolic link|loop/i;

describe.each(PRESETS)("symlinks ($label)", ({ preset }) => {
  let arena: Arena;
  beforeAll(() => {
    arena = makeArena("links");
    // Links into the sibling and outside (C2, C3).
    arena.link("to-work2", arena.work2);
    arena.link("to-work2-rel", "../work2");
    arena.link("to-outside", arena.outside);
    arena.link("id_rsa", arena.secretFile);
    arena.link("deep/nested/key", `../../../outside/${path.basename(arena.secretFile)}`);
    arena.link("dangling-out", path.join(arena.outside, "not-yet"));
    arena.link("dangling-dir-out", path.join(arena.outside, "no-dir"));
    arena.link("loop-a", "loop-b");
    arena.link("loop-b", "loop-a");
    arena.link("self", "self");
    // A chain of 45 links ending at a real file inside.
    arena.put("chain-target.txt", "end of the chain\n");
    for (let i = 0; i < 45; i++)
      arena.link(`chain-${i}`, i === 44 ? "chain-target.txt" : `chain-${i + 1}`);
    // Links that stay inside are fine.
    arena.link("readme-link", "README.md");
    arena.link("src-link", "src");
  });
  afterAll(() => arena.cleanup());

  it("C2: a link into the sibling work2 or outside is refused for reading, listing and searching", async () => {
    const run = await attack(arena, {
      preset,
      turns: [
        turn(
          ["r1", "Read", { file_path: "to-work2/x" }],
          ["r2", "Read", { file_path: "to-work2-rel/x" }],
          ["r3", "Read", { file_path: "to-work2/.env" }],
          ["r4", "Read", { file_path: "to-outside/dir/../dir/x" }],
          ["l1", "LS", { path: "to-work2" }],
          ["l2", "LS", { path: "to-outside" }],
          ["l3", "LS", { path: "to-outside/dir" }],
          ["g1", "Grep", { pattern: "KEY", path: "to-work2" }],
          ["g2", "Grep", { pattern: "KEY", path: "to-outside", output_mode: "content" }],
          ["g3", "Grep", { pattern: "KEY", path: "id_rsa", output_mode: "content" }],
          ["gl1", "Glob", { pattern: "to-work2/*" }],
          ["gl2", "Glob", { pattern: "to-outside/**" }],
          ["gl3", "Glob", { pattern: "**", path: "to-outside" }],
        ),
      ],
    });
    for (const id of ["r1", "r2", "r3", "r4", "l1", "l2", "l3", "g1", "g2", "g3"])
      expectError(run, id, REFUSED);
    for (const id of ["gl1", "gl2", "gl3"]) expectError(run, id, REFUSED);
  });

  it("links that stay inside work", async () => {
    const run = await attack(arena, {
      preset,
      turns: [
        turn(
          ["r1", "Read", { file_path: "readme-link" }],
          ["r2", "Read", { file_path: "src-link/app.ts" }],
          ["r3", "Read", { file_path: "chain-44" }],
          ["l1", "LS", { path: "src-link" }],
        ),
      ],
    });
    expectOk(run, "r1", /hello from the workspace/);
    expectOk(run, "r2", /KEY_NAME/);
    expectOk(run, "r3", /end of the chain/);
    expectOk(run, "l1", /app\.ts/);
  });

  it("C3: live, nested and dangling links to outside are refused for reading and writing", async () => {
    const run = await attack(arena, {
      preset,
      approval: approveAll,
      turns: [
        turn(
          ["r1", "Read", { file_path: "id_rsa" }],
          ["r2", "Read", { file_path: "deep/nested/key" }],
          ["r3", "Read", { file_path: "dangling-out" }],
        ),
        turn(["w1", "Write", { file_path: "id_rsa", content: "pwned" }]),
        turn(["w2", "Write", { file_path: "dangling-out", content: "pwned" }]),
        turn(["w3", "Write", { file_path: "dangling-dir-out/sub/file", content: "pwned" }]),
        turn(["e1", "Edit", { file_path: "id_rsa", old_string: "KEY", new_string: "K" }]),
        turn(["e2", "Edit", { file_path: "deep/nested/key", old_string: "KEY", new_string: "K" }]),
      ],
    });
    for (const id of ["r1", "r2", "w1", "w2", "w3", "e1", "e2"]) expectError(run, id, REFUSED);
    expectError(run, "r3");
    expect(exists(path.join(arena.outside, "not-yet"))).toBe(false);
    expect(exists(path.join(arena.outside, "no-dir"))).toBe(false);
    // The link itself is left as it was (never replaced by a file either).
    expect(fs.readlinkSync(path.join(arena.work, "id_rsa"))).toBe(arena.secretFile);
  });

  it("C3: writing through a symlinked parent directory pointing outside is refused", async () => {
    const run = await attack(arena, {
      preset,
      approval: approveAll,
      turns: [
        turn(["w1", "Write", { file_path: "to-outside/planted.txt", content: "pwned" }]),
        turn(["w2", "Write", { file_path: "to-outside/new-dir/planted.txt", content: "pwned" }]),
        turn(["w3", "Write", { file_path: "to-work2/x", content: "pwned" }]),
        turn(["w4", "Write", { file_path: `${arena.work}/to-work2-rel/y`, content: "pwned" }]),
        turn(["e1", "Edit", { file_path: "to-work2/x", old_string: "KEY", new_string: "K" }]),
      ],
    });
    for (const id of ["w1", "w2", "w3", "w4", "e1"]) expectError(run, id, REFUSED);
  });

  it("C3: a loop, a self link and a chain of 45 links: ELOOP error results, no hang", async () => {
    const calls: Call[] = [];
    for (const target of ["loop-a", "self", "chain-0", "loop-a/x"])
      calls.push([`r-${target}`, "Read", { file_path: target }]);
    calls.push(["l1", "LS", { path: "loop-a" }]);
    calls.push(["g1", "Grep", { pattern: "x", path: "loop-b" }]);
    calls.push(["gl1", "Glob", { pattern: "**", path: "chain-0" }]);
    // A walk over the whole workspace meets the loops and the chain and still ends.
    calls.push(["g2", "Grep", { pattern: "end of the chain" }]);
    calls.push(["gl2", "Glob", { pattern: "**/*" }]);
    const run = await attack(arena, {
      preset,
      approval: approveAll,
      turns: [
        turn(...calls),
        turn(["w1", "Write", { file_path: "loop-a", content: "x" }]),
        turn(["w2", "Write", { file_path: "chain-0", content: "x" }]),
        turn(["w3", "Write", { file_path: "self/x", content: "x" }]),
      ],
    });
    for (const id of ["r-loop-a", "r-self", "r-chain-0", "r-loop-a/x", "l1", "g1", "gl1"])
      expectError(run, id, LOOP);
    for (const id of ["w1", "w2", "w3"]) expectError(run, id, LOOP);
    // The walks list the real file once and never a link's target outside.
    expectOk(run, "g2", /chain-target\.txt/);
    expectOk(run, "gl2", /chain-target\.txt/);
    expect(fs.readlinkSync(path.join(arena.work, "chain-0"))).toBe("chain-1");
    expect(fs.readFileSync(path.join(arena.work, "chain-target.txt"), "utf8")).toBe(
      "end of the chain\n",
    );
  }, 120_000);

  // RELIABILITY C3: "creating through a dangling in-workspace link is allowed".
  // DESIGN: writes never follow a symlink at the final component, so skein departs from C3's
  // "creating through a dangling in-workspace link is allowed": the write is refused, the model
  // is told to write to the target path, and nothing is created (README, "The workspace").
  it("C3: a write through a dangling link (final component) that points inside is refused", async () => {
    const tag = preset ?? "none";
    arena.link(`future-${tag}`, `made-through-link-${tag}.txt`);
    const run = await attack(arena, {
      preset,
      approval: approveAll,
      turns: [turn(["w1", "Write", { file_path: `future-${tag}`, content: "hello" }])],
    });
    expectError(run, "w1", /symbolic link/i);
    expect(fs.existsSync(path.join(arena.work, `made-through-link-${tag}.txt`))).toBe(false);
    expect(fs.lstatSync(path.join(arena.work, `future-${tag}`)).isSymbolicLink()).toBe(true);
  });

  it("C3: creating a file below a dangling directory link that points inside is allowed", async () => {
    const tag = preset ?? "none";
    arena.link(`future-dir-${tag}`, `new-dir-${tag}`);
    const run = await attack(arena, {
      preset,
      approval: approveAll,
      turns: [turn(["w1", "Write", { file_path: `future-dir-${tag}/f`, content: "hi" }])],
    });
    expectOk(run, "w1");
    expect(fs.readFileSync(path.join(arena.work, `new-dir-${tag}`, "f"), "utf8")).toBe("hi");
  });

  it("C5: globs and searches matching links that point outside list nothing from outside", async () => {
    const run = await attack(arena, {
      preset,
      turns: [
        turn(
          ["gl1", "Glob", { pattern: "**/*" }],
          ["gl2", "Glob", { pattern: "*" }],
          ["gl3", "Glob", { pattern: "**/key" }],
          ["gl4", "Glob", { pattern: "id_rsa" }],
          ["gl5", "Glob", { pattern: "**/x" }],
          ["gl6", "Glob", { pattern: "**/.env" }],
          ["g1", "Grep", { pattern: "SECRET", output_mode: "content" }],
          ["g2", "Grep", { pattern: "KEY", output_mode: "files_with_matches" }],
          ["g3", "Grep", { pattern: "KEY", output_mode: "count" }],
          ["g4", "Grep", { pattern: "KEY", glob: "**/key", output_mode: "content" }],
          ["g5", "Grep", { pattern: "KEY", path: "deep", output_mode: "content" }],
          ["l1", "LS", { path: "." }],
          ["l2", "LS", { path: "deep/nested" }],
        ),
      ],
    });
    for (const id of ["gl1", "gl2", "gl3", "gl4", "gl5", "gl6"]) {
      const text = run.text(id);
      for (const link of ["id_rsa", "deep/nested/key", "to-outside", "to-work2"])
        expect(text, `${id} lists ${link}`).not.toContain(link);
    }
    for (const id of ["g1", "g2", "g3", "g4", "g5"]) {
      expect(run.text(id)).not.toMatch(/id_rsa|nested\/key|to-outside|to-work2/);
    }
    // LS shows the links as links (not followed), which is fine: no target content.
    expectOk(run, "l1", /id_rsa \(symlink\)/);
    expectOk(run, "l2", /key \(symlink\)/);
  });
});

describe("a symlink swapped in after the check (best effort, through the public API)", () => {
  let arena: Arena;
  beforeAll(() => {
    arena = makeArena("swap");
  });
  afterAll(() => arena.cleanup());

  /** Many Writes into `d/`, while `d` keeps flipping between a real directory and a link to outside. */
  async function writesDuringSwaps(startSwapping: () => () => Promise<void>) {
    const turns = Array.from({ length: 30 }, (_, t) =>
      turn(
        ...Array.from(
          { length: 10 },
          (_, i): Call => [
            `w${t}-${i}`,
            "Write",
            { file_path: `d/f${t}-${i}.txt`, content: `n${t}-${i}` },
          ],
        ),
      ),
    );
    const texts = new Set<string>();
    const stop = startSwapping();
    let run: Awaited<ReturnType<typeof attack>> | undefined;
    try {
      // A fixed number of runs, however fast the machine (each is checked for leaks and changes).
      for (let repeat = 0; repeat < 2; repeat++) {
        run = await attack(arena, { approval: approveAll, turns });
        for (const call of run.calls.values()) texts.add(callText(call));
      }
    } finally {
      await stop();
    }
    expect(run?.result.subtype).toBe("success");
    // The model gave relative paths: no message shows a host path, even the workspace's own, or
    // a raw Node error ("Write failed: EINVAL: invalid argument, readlink '/tmp/...'").
    const raw = [...texts].filter(
      (text) => text.includes(arena.parent) || /\bE[A-Z]+: /.test(text),
    );
    expect(raw, "results with a raw file-system error naming a host path").toEqual([]);
    // Nothing landed outside (the snapshot check of attack() covers files, temp files and mtimes).
    expect(fs.readdirSync(arena.outside).sort()).toEqual(
      [path.basename(arena.secretFile), "dir"].sort(),
    );
  }

  it("a shell loop swapping the parent directory concurrently", async () => {
    await writesDuringSwaps(() => {
      const child = spawn(
        "/bin/sh",
        [
          "-c",
          'i=0; while :; do i=$((i+1)); mv -T d "away.$i" 2>/dev/null; ln -s "$OUT" d 2>/dev/null; rm -f d 2>/dev/null; mkdir d 2>/dev/null; done',
        ],
        { cwd: arena.work, env: { ...process.env, OUT: arena.outside }, stdio: "ignore" },
      );
      return async () => {
        const closed = new Promise((resolve) => child.once("close", resolve));
        child.kill("SIGKILL");
        await closed;
      };
    });
  }, 120_000);

  it("a setInterval swapping the parent directory between the tool's steps", async () => {
    await writesDuringSwaps(() => {
      const d = path.join(arena.work, "d");
      let n = 0;
      const timer = setInterval(() => {
        try {
          const stats = fs.lstatSync(d, { throwIfNoEntry: false });
          if (stats?.isSymbolicLink()) {
            fs.unlinkSync(d);
            fs.mkdirSync(d);
          } else {
            if (stats) fs.renameSync(d, path.join(arena.work, `gone.${++n}`));
            fs.symlinkSync(arena.outside, d);
          }
        } catch {}
      }, 0);
      return async () => clearInterval(timer);
    });
  }, 120_000);
});

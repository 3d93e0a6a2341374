/**
 * README.md's code is real code. Every ```ts block is the verbatim content of the examples/ file
 * named in the HTML comment just before it (so the two cannot drift), tsc checks those files with
 * the project's tsconfig, and each one runs here offline, against `mockServer`: the hello world
 * that names a real model reaches the mock server through the provider's base URL variable. The
 * commands the ```sh blocks show exist. (docs/*.md: test/docs.test.ts.)
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { mockServer } from "skein/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  codeBlocks,
  commandProblems,
  logged,
  ROOT,
  readRepoFile,
  sourceText,
  toolResultTexts,
} from "./readme-blocks.ts";

const readme = readRepoFile("README.md");
const blocks = codeBlocks(readme);
const shown = blocks.filter((block) => block.lang === "ts");

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("README.md", () => {
  it("is a front page: at most 400 lines, and a program in its first 60", () => {
    const lines = readme.split("\n");
    expect(lines.length).toBeLessThanOrEqual(400);
    expect(shown[0]!.line).toBeLessThanOrEqual(60);
    expect(readme).toContain("npm install skein\n");
  });

  it("every ts block names its examples/ file in the comment just before it", () => {
    expect(shown.length).toBeGreaterThanOrEqual(2);
    for (const block of shown)
      expect(
        block.file,
        `README.md:${block.line}: put <!-- examples/<file>.ts --> above it`,
      ).toBeDefined();
  });

  it.each(shown)("README.md:$line is $file, byte for byte", ({ file, code }) => {
    expect(code).toBe(readRepoFile(file!));
  });

  it("every file under examples/readme/ is shown, and every shown file is run", () => {
    const files = shown.map((block) => block.file!);
    for (const name of readdirSync(path.join(ROOT, "examples/readme")))
      expect(files, `examples/readme/${name} is not in README.md`).toContain(
        `examples/readme/${name}`,
      );
    expect(files.toSorted()).toEqual(Object.keys(RUNS).toSorted());
  });

  it("the commands the sh blocks show exist", () => {
    const pkg = JSON.parse(readRepoFile("package.json"));
    expect(blocks.filter((block) => block.lang === "sh").length).toBeGreaterThanOrEqual(3);
    expect(commandProblems(blocks, pkg.scripts, sourceText("src"))).toEqual([]);
  });

  it("the install table names every optional peer, with its range", () => {
    const pkg = JSON.parse(readRepoFile("package.json"));
    // Each `npm install a@range b` in the README, as package -> range ("" when none is given).
    const installed = new Map<string, string>();
    for (const [, specs] of readme.matchAll(/`npm install ([^`]+)`/g))
      for (const spec of specs!.split(" ")) {
        const at = spec.lastIndexOf("@");
        if (at > 0) installed.set(spec.slice(0, at), spec.slice(at + 1));
        else installed.set(spec, "");
      }
    for (const [name, range] of Object.entries<string>(pkg.peerDependencies)) {
      expect(installed.has(name), `README.md's install table does not name ${name}`).toBe(true);
      // A range given is the peer range itself, or one of its alternatives.
      const given = installed.get(name)!;
      if (given) expect(range.split(" || "), name).toContain(given);
    }
  });
});

/** How each file the README shows runs here. */
const RUNS: Record<string, () => void> = {
  "examples/readme/hello.ts": () => {
    it("against a real model's API: the tool is called, its result sent, the answer printed", async () => {
      const server = await mockServer({
        script: [
          { toolCalls: [{ name: "get_weather", input: { city: "Tokyo" } }] },
          { text: "Sunny in Tokyo." },
        ],
      });
      try {
        vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
        vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test");
        expect(await logged(() => import("../examples/readme/hello.ts"))).toEqual([
          "Sunny in Tokyo.",
        ]);
        expect(server.requests).toHaveLength(2);
        expect(server.requests[0]!.body.model).toBe("claude-sonnet-4-6");
        expect(server.requests[0]!.headers["x-api-key"]).toBe("sk-ant-test");
        expect(toolResultTexts(server.requests[1]!.body)).toEqual(["It's sunny in Tokyo."]);
      } finally {
        await server.close();
      }
    });
  },

  "examples/readme/hello-offline.ts": () => {
    it("prints the mock server's answer, after the tool ran", async () => {
      expect(await logged(() => import("../examples/readme/hello-offline.ts"))).toEqual([
        "It's sunny in Tokyo today.",
      ]);
    });
  },
};

for (const [file, run] of Object.entries(RUNS)) describe(file, run);

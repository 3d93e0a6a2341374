/**
 * README.md's code is real code. Every ```ts block is the verbatim content of the examples/ file
 * named in the HTML comment just before it (so the two cannot drift), tsc checks those files with
 * the project's tsconfig, and each one runs here offline: a scripted model or `mockServer`, no
 * network, no key. Examples that name real hosts get a `fetch` that serves those hosts from the
 * mock server. The commands the ```sh blocks show exist.
 */
import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { createBareAgent, openai, type Prompt } from "skein";
import { type MockScript, type MockServer, mockServer } from "skein/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  codeBlocks,
  logged,
  ROOT,
  readRepoFile,
  routeFetch,
  toolResultTexts,
  workspace,
} from "./readme-blocks.ts";

// The permissions example asks on the terminal; here the terminal answers from a list.
const terminal = vi.hoisted(() => ({ answers: [] as string[], asked: [] as string[], closed: 0 }));
vi.mock("node:readline/promises", () => ({
  createInterface: () => ({
    question: async (question: string) => {
      terminal.asked.push(question);
      return terminal.answers.shift() ?? "";
    },
    close: () => {
      terminal.closed++;
    },
  }),
}));

const readme = readRepoFile("README.md");
const blocks = codeBlocks(readme);
const shown = blocks.filter((block) => block.lang === "ts");

let server: MockServer | undefined;
const startedIn = process.cwd();
afterEach(async () => {
  vi.unstubAllEnvs();
  vi.unstubAllGlobals();
  process.chdir(startedIn);
  await server?.close();
  server = undefined;
});

/** A mock server for this test, closed after it. */
async function serve(script: MockScript): Promise<MockServer> {
  server = await mockServer({ script });
  return server;
}

/** The Anthropic provider's environment, pointed at the mock server. */
function anthropicAt(url: string): void {
  vi.stubEnv("ANTHROPIC_BASE_URL", url);
  vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test");
}

describe("README.md code blocks", () => {
  it("every ts block names its examples/ file in the comment just before it", () => {
    expect(shown.length).toBeGreaterThanOrEqual(7);
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
    const program = readRepoFile("src/cli/program.ts");
    const commands = blocks
      .filter((block) => block.lang === "sh")
      .flatMap((block) => block.code.split("\n"))
      .map((line) => line.replace(/\s+#.*$/, "").trim())
      .filter(Boolean);
    expect(commands.length).toBeGreaterThan(10);
    for (const command of commands) {
      for (const [, script] of command.matchAll(/npm (?:run )?(\S+)/g))
        if (script !== "install") expect(pkg.scripts, command).toHaveProperty(script!);
      if (!command.startsWith("npx skein")) continue;
      const words = command.split("|")[0]!.replace(/"[^"]*"/g, "");
      for (const [flag] of words.matchAll(/(?<= )--?[a-z][\w-]*/g))
        expect(program, `${command}: ${flag}`).toMatch(new RegExp(`"(-\\w, )?${flag}[ "]`));
      const subcommand = /^npx skein (\w+)$/.exec(command)?.[1];
      if (subcommand) expect(program).toContain(`.command("${subcommand}")`);
    }
    // `npx skein` runs the package's bin, which the README names too.
    expect(readme).toContain(`node ${pkg.bin.skein.replace("./", "")} "..."`);
  });
});

/** How each file the README shows runs here (a file another test runs names that test). */
const RUNS: Record<string, () => void> = {
  "examples/readme/quick-start.ts": () => {
    it("streams the tool's result, then the answer", async () => {
      expect(await logged(() => import("../examples/readme/quick-start.ts"))).toEqual([
        "get_weather -> It's sunny in Tokyo.",
        "success It is sunny in Tokyo.",
      ]);
    });
  },

  "examples/readme/prompts.ts": () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
    const system = "You review screenshots of web pages. Answer in one short paragraph.";
    const text = "What looks broken on this page?";
    const prompt: Prompt = [
      { type: "text", text },
      {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: png.toString("base64") },
      },
    ];

    it("sends the system prompt, and the text and image blocks, over the Anthropic protocol", async () => {
      const { url, requests } = await serve([{ text: "The menu covers the title." }]);
      anthropicAt(url);
      await workspace({ "screenshot.png": png });
      expect(await logged(() => import("../examples/readme/prompts.ts"))).toEqual([
        "The menu covers the title.",
      ]);
      const body = requests[0]!.body;
      expect(JSON.stringify(body.system)).toContain(system);
      expect(body.messages).toHaveLength(1);
      expect(body.messages[0]).toMatchObject({ role: "user", content: prompt });
    });

    it("the OpenAI protocol sends the same prompt as text and image_url parts", async () => {
      const { url, requests } = await serve([{ text: "ok" }]);
      const agent = createBareAgent({
        model: openai({ baseURL: `${url}/v1`, apiKey: "test" }),
        systemPrompt: system,
      });
      expect((await agent.run(prompt)).subtype).toBe("success");
      expect(requests[0]!.body.messages).toEqual([
        { role: "system", content: system },
        {
          role: "user",
          content: [
            { type: "text", text },
            {
              type: "image_url",
              image_url: { url: `data:image/png;base64,${png.toString("base64")}` },
            },
          ],
        },
      ]);
    });
  },

  "examples/readme/models.ts": () => {
    it("each agent reaches its host, with the protocol, model id and key the README says", async () => {
      const { url, requests } = await serve(({ protocol }) => ({ text: `hi over ${protocol}` }));
      const asked = routeFetch({
        "https://api.anthropic.com": url,
        "https://api.openai.com/v1": `${url}/v1`,
        "https://api.deepseek.com/anthropic": url,
        "http://localhost:11434/v1": `${url}/v1`,
        "http://localhost:8000/v1": `${url}/v1`,
      });
      for (const name of ["ANTHROPIC", "OPENAI"]) vi.stubEnv(`${name}_BASE_URL`, undefined);
      vi.stubEnv("SKEIN_MODEL", undefined);
      vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test");
      vi.stubEnv("OPENAI_API_KEY", "sk-openai-test");
      vi.stubEnv("DEEPSEEK_API_KEY", "sk-deepseek-test");
      const agents = await import("../examples/readme/models.ts");
      const expected = {
        claude: ["https://api.anthropic.com/v1/messages", "claude-sonnet-4-6", "sk-ant-test"],
        gpt: ["https://api.openai.com/v1/chat/completions", "gpt-5-mini", "sk-openai-test"],
        deepseek: [
          "https://api.deepseek.com/anthropic/v1/messages",
          "deepseek-v4-flash",
          "sk-deepseek-test",
        ],
        ollama: ["http://localhost:11434/v1/chat/completions", "qwen3:8b", undefined],
        thinker: ["https://api.anthropic.com/v1/messages", "claude-sonnet-4-6", "sk-ant-test"],
        vllm: ["http://localhost:8000/v1/chat/completions", "Qwen/Qwen3-8B", undefined],
      };
      expect(Object.keys(agents).toSorted()).toEqual(Object.keys(expected).toSorted());
      for (const [name, [host, model, key]] of Object.entries(expected)) {
        const result = await agents[name as keyof typeof agents].run("Say hello.");
        const request = requests.at(-1)!;
        const protocol = host!.endsWith("/messages") ? "anthropic" : "openai";
        expect([name, result.subtype, result.result]).toEqual([
          name,
          "success",
          `hi over ${protocol}`,
        ]);
        expect([name, asked.at(-1), request.body.model]).toEqual([name, host, model]);
        const sent =
          request.headers["x-api-key"] ?? request.headers.authorization?.replace("Bearer ", "");
        expect([name, sent]).toEqual([name, key]);
      }
      expect(requests.at(-2)!.body).toMatchObject({
        max_tokens: 16_000,
        thinking: { type: "enabled", budget_tokens: 8_000 },
      });
    });
  },

  "examples/readme/permissions.ts": () => {
    it("asks on the terminal only for the push; the .env read and the rm are denied by rule", async () => {
      const { url, requests } = await serve([
        {
          toolCalls: [
            { name: "Read", input: { file_path: "src/answer.ts" } },
            { name: "Read", input: { file_path: ".env" } },
          ],
        },
        {
          toolCalls: [
            {
              name: "Edit",
              input: { file_path: "src/answer.ts", old_string: "41", new_string: "42" },
            },
            { name: "Bash", input: { command: "git push origin main" } },
            { name: "Bash", input: { command: "rm -rf src" } },
          ],
        },
        { text: "Fixed the answer; the push was declined." },
      ]);
      anthropicAt(url);
      const dir = await workspace({
        "src/answer.ts": "export const answer = 41;\n",
        ".env": "TOKEN=x\n",
      });
      Object.assign(terminal, { answers: ["n"], asked: [], closed: 0 });
      expect(await logged(() => import("../examples/readme/permissions.ts"))).toEqual([
        "Fixed the answer; the push was declined.",
      ]);
      expect(terminal.asked).toEqual([
        expect.stringMatching(
          /^Bash \{"command":"git push origin main"\} \(.+\) allow\? \[y\/N\] $/,
        ),
      ]);
      expect(terminal.closed).toBe(1);
      expect(await readFile(path.join(dir, "src/answer.ts"), "utf8")).toBe(
        "export const answer = 42;\n",
      );
      const [read, env] = toolResultTexts(requests[1]!.body);
      expect(read).toContain("export const answer = 41;");
      expect(env).toMatch(/Permission denied.*Read\(\.env\)/);
      const [edit, push, remove] = toolResultTexts(requests[2]!.body);
      expect(edit).not.toMatch(/denied|error/i);
      expect(push).toContain("The user said no.");
      expect(remove).toMatch(/Permission denied.*Bash\(rm \*\)/);
    });
  },

  "examples/readme/hooks.ts": () => {
    it("the hook blocks the production deploy; the staging result is rewritten and logged", async () => {
      expect(await logged(() => import("../examples/readme/hooks.ts"))).toEqual([
        'deploy {"service":"api","env":"staging"} -> Deployed api to staging. (logged)',
        'deploy {"service":"web","env":"production"} refused: Tool call blocked: Production deploys need a human.',
        "success api is on staging; production needs a human.",
      ]);
    });
  },

  "examples/readme/mock-server.ts": () => {
    it("retries the 429 after its retry-after, then answers", async () => {
      expect(await logged(() => import("../examples/readme/mock-server.ts"))).toEqual([
        "retry 1 after 1000 ms",
        "success hi",
        "2 requests",
      ]);
    });
  },

  // Run, with its output checked, by the examples' own test.
  "examples/agents-researcher-writer.ts": () => {
    it("is run by test/examples-agents.test.ts", () => {
      expect(readRepoFile("test/examples-agents.test.ts")).toContain(
        'from "../examples/agents-researcher-writer.ts"',
      );
    });
  },

  "examples/adapters.ts": () => {
    it("is run by test/examples-adapters.test.ts", () => {
      expect(readRepoFile("test/examples-adapters.test.ts")).toContain(
        'from "../examples/adapters.ts"',
      );
    });
  },

  "examples/readme/many-machines.ts": () => {
    it("is run by test/examples-many-machines.test.ts (it needs a Postgres)", () => {
      expect(readRepoFile("test/examples-many-machines.test.ts")).toContain(
        'import("../examples/readme/many-machines.ts")',
      );
    });
  },

  "examples/mcp-filesystem.ts": () => {
    it("is run by test/examples-mcp.test.ts", () => {
      expect(readRepoFile("test/examples-mcp.test.ts")).toContain(
        'from "../examples/mcp-filesystem.ts"',
      );
    });
  },

  "examples/interactive-steering.ts": () => {
    it("is run by test/examples-interactive.test.ts", () => {
      expect(readRepoFile("test/examples-interactive.test.ts")).toContain(
        'from "../examples/interactive-steering.ts"',
      );
    });
  },

  "examples/interactive-output.ts": () => {
    it("is run by test/examples-interactive.test.ts", () => {
      expect(readRepoFile("test/examples-interactive.test.ts")).toContain(
        'from "../examples/interactive-output.ts"',
      );
    });
  },

  "examples/readme/tracing.ts": () => {
    it("records a chat span inside the run's invoke_agent span", async () => {
      expect(await logged(() => import("../examples/readme/tracing.ts"))).toEqual([
        "chat scripted",
        "invoke_agent helper",
      ]);
    });
  },

  "examples/sessions-continue.ts": () => {
    it("is run by test/examples-sessions.test.ts", () => {
      expect(readRepoFile("test/examples-sessions.test.ts")).toContain(
        'from "../examples/sessions-continue.ts"',
      );
    });
  },
};

for (const [file, run] of Object.entries(RUNS)) describe(file, run);

/**
 * The guides' code is real code, as README.md's is (test/readme.test.ts). Every ```ts block in
 * docs/*.md is the verbatim content of the examples/ file named in the HTML comment just before it,
 * tsc checks those files with the project's tsconfig, and each one runs here (or in the test its
 * comment names) offline: a scripted model or `mockServer`, no network, no key. Examples that name
 * real hosts get a `fetch` that serves those hosts from the mock server. The commands the ```sh
 * blocks show exist, every guide is linked from the README, and no page names the project's
 * internal notes.
 */
import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { createBareAgent, openai, type Prompt } from "skein";
import { type MockScript, type MockServer, mockServer } from "skein/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { checkExamples, docExamples, examplesUnder } from "../scripts/doc-examples.ts";
import {
  type CodeBlock,
  codeBlocks,
  commandProblems,
  logged,
  ROOT,
  readRepoFile,
  routeFetch,
  sourceText,
  toolResultTexts,
  userPages,
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

const guides = userPages().filter((page) => page.startsWith("docs/"));
const blocks: (CodeBlock & { page: string })[] = guides.flatMap((page) =>
  codeBlocks(readRepoFile(page), page).map((block) => ({ ...block, page })),
);
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

/** What a user-facing page must not name: the project's internal notes, which a reader cannot follow. */
const INTERNAL = /\bseeds? \d|\bDESIGN\b|\bRELIABILITY\b|\bdesign\/\w+\.md|\bC\d{1,2}\b/;

describe("docs/*.md", () => {
  it("there are guides, and every ts block names its examples/ file in the comment just before it", () => {
    expect(guides.length).toBeGreaterThanOrEqual(10);
    expect(shown.length).toBeGreaterThanOrEqual(10);
    for (const block of shown)
      expect(
        block.file,
        `${block.page}:${block.line}: put <!-- examples/<file>.ts --> above it`,
      ).toBeDefined();
  });

  it.each(shown)("$page:$line is $file, byte for byte", ({ file, code }) => {
    expect(code).toBe(readRepoFile(file!));
  });

  it("every file under examples/docs/ is shown, and every shown file is run", () => {
    const files = [...new Set(shown.map((block) => block.file!))];
    for (const name of readdirSync(path.join(ROOT, "examples/docs")))
      expect(files, `examples/docs/${name} is in no guide`).toContain(`examples/docs/${name}`);
    expect(files.toSorted()).toEqual(Object.keys(RUNS).toSorted());
  });

  it("the commands the sh blocks show exist", () => {
    const pkg = JSON.parse(readRepoFile("package.json"));
    expect(blocks.filter((block) => block.lang === "sh").length).toBeGreaterThanOrEqual(5);
    expect(commandProblems(blocks, pkg.scripts, sourceText("src"))).toEqual([]);
    // `npx skein` runs the package's bin, which the command's guide names too.
    expect(readRepoFile("docs/cli.md")).toContain(`node ${pkg.bin.skein.replace("./", "")} "..."`);
  });

  it("every guide is linked from README.md", () => {
    const readme = readRepoFile("README.md");
    for (const page of guides)
      expect(readme, `README.md does not link ${page}`).toContain(`](${page})`);
  });

  it.each(userPages())(
    "%s names no internal note (seeds, DESIGN, RELIABILITY cases, design/*.md)",
    (page) => {
      const text = readRepoFile(page);
      const found = INTERNAL.exec(text);
      expect(found && text.slice(found.index - 60, found.index + 40)).toBeNull();
    },
  );

  it("the check of internal names catches each kind", () => {
    for (const text of [
      "(seed 002)",
      "seeds 000/001",
      "DESIGN says",
      "RELIABILITY C3",
      "case C13",
      "design/agents.md",
    ])
      expect(INTERNAL.test(text), text).toBe(true);
    for (const text of ["seeded random commands", "the design choices", "ARCHITECTURE.md"])
      expect(INTERNAL.test(text), text).toBe(false);
  });
});

/** How each file the guides show runs here (a file another test runs names that test). */
const RUNS: Record<string, () => void> = {
  "examples/docs/quick-start.ts": () => {
    it("streams the tool's result, then the answer", async () => {
      expect(await logged(() => import("../examples/docs/quick-start.ts"))).toEqual([
        "get_weather -> It's sunny in Tokyo.",
        "success It is sunny in Tokyo.",
      ]);
    });
  },

  "examples/docs/prompts.ts": () => {
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
      expect(await logged(() => import("../examples/docs/prompts.ts"))).toEqual([
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

  "examples/docs/models.ts": () => {
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
      const agents = await import("../examples/docs/models.ts");
      const expected = {
        claude: ["https://api.anthropic.com/v1/messages", "claude-sonnet-4-6", "sk-ant-test"],
        gpt: ["https://api.openai.com/v1/responses", "gpt-5-mini", "sk-openai-test"],
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
        const protocol = host!.endsWith("/messages")
          ? "anthropic"
          : host!.endsWith("/responses")
            ? "openai-responses"
            : "openai";
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

  "examples/docs/responses.ts": () => {
    it("a reasoning model with a tool over three turns on the Responses API, its cost read from usage", async () => {
      const usage = { inputTokens: 1_200, outputTokens: 300, cacheReadInputTokens: 1_000 };
      const { url, requests } = await serve([
        {
          thinking: "Paris first",
          toolCalls: [{ name: "get_weather", input: { city: "Paris" } }],
          usage,
        },
        {
          thinking: "Now Oslo",
          toolCalls: [{ name: "get_weather", input: { city: "Oslo" } }],
          usage,
        },
        { text: "Both are sunny at 21 °C: pick either.", usage },
      ]);
      const asked = routeFetch({ "https://api.openai.com/v1": `${url}/v1` });
      vi.stubEnv("OPENAI_BASE_URL", undefined);
      vi.stubEnv("OPENAI_API_KEY", "sk-openai-test");
      // gpt-5-mini: $0.25/M input, $2/M output, $0.025/M cache reads; three turns.
      const cost = (3 * (1_200 * 0.25 + 300 * 2 + 1_000 * 0.025)) / 1_000_000;
      expect(await logged(() => import("../examples/docs/responses.ts"))).toEqual([
        "turn: get_weather",
        "turn: get_weather",
        "turn: answer",
        "Both are sunny at 21 °C: pick either.",
        "900 output tokens (600 reasoning)",
        `cost $${cost.toFixed(6)}`,
      ]);
      expect(asked).toEqual(Array(3).fill("https://api.openai.com/v1/responses"));
      const [first, second, third] = requests.map((request) => request.body);
      expect(first).toMatchObject({
        model: "gpt-5-mini",
        store: false,
        include: ["reasoning.encrypted_content"],
        reasoning: { effort: "medium", summary: "auto" },
      });
      // Each reasoning item goes back as it came, in its place before the call it preceded.
      const kinds = (body: any) => body.input.map((item: any) => item.type ?? item.role);
      expect(kinds(third)).toEqual([
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "function_call",
        "function_call_output",
      ]);
      expect(third.input.slice(0, 4)).toEqual(second.input);
      expect(third.input[1].encrypted_content).toMatch(/^gAAAAmock/);
    });
  },

  "examples/docs/permissions.ts": () => {
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
      expect(await logged(() => import("../examples/docs/permissions.ts"))).toEqual([
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

  "examples/docs/hooks.ts": () => {
    it("the hook blocks the production deploy; the staging result is rewritten and logged", async () => {
      expect(await logged(() => import("../examples/docs/hooks.ts"))).toEqual([
        'deploy {"service":"api","env":"staging"} -> Deployed api to staging. (logged)',
        'deploy {"service":"web","env":"production"} refused: Tool call blocked: Production deploys need a human.',
        "success api is on staging; production needs a human.",
      ]);
    });
  },

  "examples/docs/policy-modes.ts": () => {
    it("plan refuses the Write; acceptEdits runs it unasked", async () => {
      await workspace({});
      expect(await logged(() => import("../examples/docs/policy-modes.ts"))).toEqual([
        "Plan: write notes.md with a heading. false",
        "Wrote notes.md. true",
      ]);
    });
  },

  "examples/docs/policy-hooks.ts": () => {
    it("the lead's hooks see the researcher's call; stop asks once for a check", async () => {
      expect(await logged(() => import("../examples/docs/policy-hooks.ts"))).toEqual([
        "call researcher at depth 0",
        "call search at depth 1 under r1",
        "researcher answered: Hooks cover the whole tree.",
        "Checked: the answer stands.",
      ]);
    });
  },

  "examples/docs/skills.ts": () => {
    it("lists the skill, loads it with Skill, runs its script through Bash by the allow rule", async () => {
      const { url, requests } = await serve([
        { toolCalls: [{ name: "Skill", input: { name: "release-notes" } }] },
        {
          toolCalls: [
            { name: "Bash", input: { command: "python3 skills/release-notes/scripts/changes.py" } },
          ],
        },
        { text: "1.2: one fix." },
      ]);
      anthropicAt(url);
      const dir = await workspace({
        "skills/release-notes/SKILL.md":
          "---\nname: release-notes\ndescription: Writes release notes from the git history.\n---\nRun the script, then fill in template.md.\n",
        "skills/release-notes/scripts/changes.py": 'print("fix: a crash on start")\n',
        "skills/release-notes/template.md": "# Release {version}\n",
      });
      expect(await logged(() => import("../examples/docs/skills.ts"))).toEqual([
        "success 1.2: one fix.",
      ]);
      const system = JSON.stringify(requests[0]!.body.system);
      expect(system).toContain("- release-notes: Writes release notes from the git history.");
      expect(system).not.toContain("fill in template.md");
      const [skill] = toolResultTexts(requests[1]!.body);
      expect(skill).toContain("Run the script, then fill in template.md.");
      expect(skill).toContain(path.join(dir, "skills/release-notes/template.md"));
      const [bash] = toolResultTexts(requests[2]!.body);
      expect(bash).toContain("fix: a crash on start");
    });
  },

  "examples/docs/agents-in-files.ts": () => {
    it("each agent file is a tool named by its file; tools: Read, Grep keeps Write from it; it runs on the parent's model", async () => {
      // The child runs on the parent's model: one server, its turns told apart by the system prompt.
      const child = [
        {
          toolCalls: [
            { name: "Read", input: { file_path: "src/answer.ts" } },
            { name: "Write", input: { file_path: "src/answer.ts", content: "x" } },
          ],
        },
        { text: "answer is 41; it should be 42." },
      ];
      const parent = [
        { toolCalls: [{ name: "code-reviewer", input: { prompt: "Review src/answer.ts." } }] },
        { text: "The reviewer found one bug: answer is 41, not 42." },
      ];
      const { url, requests } = await serve(({ body, index }) =>
        JSON.stringify(body.system).includes("careful reviewer") ? child[index]! : parent[index]!,
      );
      anthropicAt(url);
      const dir = await workspace({
        ".claude/agents/code-reviewer.md":
          "---\nname: code-reviewer\ndescription: Reviews code for bugs. Use after a change.\ntools: Read, Grep\nmodel: inherit\n---\nYou are a careful reviewer. Report bugs only, with file and line.\n",
        "src/answer.ts": "export const answer = 41;\n",
      });
      expect(await logged(() => import("../examples/docs/agents-in-files.ts"))).toEqual([
        "success The reviewer found one bug: answer is 41, not 42.",
      ]);
      const tool = requests[0]!.body.tools.find((spec: any) => spec.name === "code-reviewer");
      expect(tool.description).toBe("Reviews code for bugs. Use after a change.");
      expect(requests[1]!.body.model).toBe("claude-sonnet-4-6");
      expect(requests[1]!.body.tools.map((spec: any) => spec.name)).toEqual(["Read", "Grep"]);
      const [read, write] = toolResultTexts(requests[2]!.body);
      expect(read).toContain("export const answer = 41;");
      expect(write).toMatch(/Write/);
      expect(await readFile(path.join(dir, "src/answer.ts"), "utf8")).toBe(
        "export const answer = 41;\n",
      );
    });
  },

  "examples/docs/mock-server.ts": () => {
    it("retries the 429 after its retry-after, then answers", async () => {
      expect(await logged(() => import("../examples/docs/mock-server.ts"))).toEqual([
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

  "examples/docs/web-server.ts": () => {
    it("is run by test/web/web-server-example.test.ts", () => {
      expect(readRepoFile("test/web/web-server-example.test.ts")).toContain(
        'import("../../examples/docs/web-server.ts")',
      );
    });
  },

  "examples/docs/many-machines.ts": () => {
    it("is run by test/examples-many-machines.test.ts (it needs a Postgres)", () => {
      expect(readRepoFile("test/examples-many-machines.test.ts")).toContain(
        'import("../examples/docs/many-machines.ts")',
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

  "examples/docs/tracing.ts": () => {
    it("records a chat span inside the run's invoke_agent span", async () => {
      expect(await logged(() => import("../examples/docs/tracing.ts"))).toEqual([
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

describe("npm run docs: the doc comments' @example blocks", () => {
  const source = [
    "/**", // line 1
    " * Adds.",
    " *",
    " * @example",
    " * ```ts",
    " * const sum: number = 1 + 2;", // line 6
    " * console.log(sum);",
    " * ```",
    " * @param a the first",
    " */",
    "export function add() {}",
    "/**",
    " * @example",
    " * add(1, 2)", // no fence: cannot be checked
    " * @returns nothing",
    " */",
    "/** @example",
    " * ```typescript",
    " * const late: string = 3;", // line 19
    " * ```",
    " */",
  ].join("\n");

  it("finds each ```ts block under an @example, at its line, and names an @example without one", () => {
    const { examples, problems } = docExamples(source, "src/add.ts");
    expect(examples).toEqual([
      { file: "src/add.ts", line: 6, code: "const sum: number = 1 + 2;\nconsole.log(sum);\n" },
      { file: "src/add.ts", line: 19, code: "const late: string = 3;\n" },
    ]);
    expect(problems).toEqual(["src/add.ts:13: an @example without a ```ts block"]);
  });

  it("the sources have @example blocks, each fenced", () => {
    const { examples, problems } = examplesUnder(ROOT, "src");
    expect(problems).toEqual([]);
    const files = new Set(examples.map((example) => example.file));
    expect(files.size).toBeGreaterThanOrEqual(4);
  });

  it("tsc reports an example that does not compile at its line in the source, and passes one that does", () => {
    const { examples } = docExamples(source, "src/add.ts");
    const errors = checkExamples(ROOT, examples, `.doc-examples-test-${process.pid}`);
    expect(errors).toEqual([
      expect.stringMatching(
        /^src\/add\.ts:19:\d+: @example: error TS2322: Type 'number' is not assignable to type 'string'\./,
      ),
    ]);
  }, 120_000);
});

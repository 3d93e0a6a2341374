import { type AgentOptions, ConfigurationError, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { expectErrorResult, expectOkResult, failureReason, offeredTools } from "./helpers.ts";

/** One batch of `deploy` calls, one per target, then a closing text turn. */
function deployRun(targets: string[], permissions: AgentOptions["permissions"]) {
  const deploy = countingTool("deploy");
  const model = scriptedModel([
    {
      toolCalls: targets.map((target) => ({
        id: `c_${target}`,
        name: "deploy",
        input: { target },
      })),
    },
    { text: "done" },
  ]);
  const agent = createBareAgent({ model, tools: [deploy.tool], permissions });
  return { deploy, model, agent };
}

describe("rule precedence on a custom tool with ruleContent", () => {
  it("deny beats ask beats allow; an unmatched call of a custom tool is allowed by default", async () => {
    const { deploy, agent } = deployRun(["x", "z", "y", "w"], {
      deny: ["deploy(x)"],
      ask: ["deploy(x)", "deploy(y)"],
      allow: ["deploy(x)", "deploy(y)", "deploy(z)"],
    });
    const result = await agent.run("go");
    // y asks: with no approval handler, the run pauses for it.
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => [call.id, call.reason])).toEqual([["c_y", "approval"]]);
    // x was denied before the pause; z ran (before the first waiting call); w is held behind y.
    expect(deploy.runs).toEqual(["z"]);
    const x = result.steps[0]!.toolCalls.find((call) => call.callId === "c_x");
    expect(x?.isError).toBe(true);
    expect(failureReason(result, "c_x")).toBe("denied");
    expect(String(x?.result.content)).toContain("deploy(x)");
  });

  it("deny beats a more specific allow (wildcard deny, exact allow)", async () => {
    const { deploy, agent } = deployRun(["prod-eu"], {
      deny: ["deploy(prod*)"],
      allow: ["deploy(prod-eu)"],
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expectErrorResult(result.messages, "c_prod-eu", /denied/i);
    expect(deploy.runs).toEqual([]);
  });

  it("ask beats allow", async () => {
    const { deploy, agent } = deployRun(["staging"], {
      ask: ["deploy(staging)"],
      allow: ["deploy(staging)", "deploy"],
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("paused");
    expect(result.pending).toEqual([
      {
        id: "c_staging",
        name: "deploy",
        input: { target: "staging" },
        reason: "approval",
        approvalReason: expect.stringMatching(/\S/),
      },
    ]);
    expect(deploy.runs).toEqual([]);
  });

  it("a bare deny of the tool denies every call (and hides it), whatever the allow rules", async () => {
    const { deploy, agent, model } = deployRun(["a"], { deny: ["deploy"], allow: ["deploy(a)"] });
    const result = await agent.run("go");
    expect(offeredTools(model)).toEqual([]);
    expectErrorResult(result.messages, "c_a");
    expect(deploy.runs).toEqual([]);
  });

  it("a pattern only matches what ruleContent returns", async () => {
    const { deploy, agent } = deployRun(["staging", "prod", "prod-us"], {
      deny: ["deploy(prod)"],
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expectOkResult(result.messages, "c_staging");
    expectErrorResult(result.messages, "c_prod", /denied/i);
    // No wildcard: "prod" does not match "prod-us".
    expectOkResult(result.messages, "c_prod-us");
    expect(deploy.runs).toEqual(["staging", "prod-us"]);
    expectValidTranscript(result.messages);
  });

  it("rules naming another tool do not restrict this one", async () => {
    const other = countingTool("other");
    const deploy = countingTool("deploy");
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "c_a", name: "deploy", input: { target: "a" } }] },
        { text: "done" },
      ]),
      tools: [deploy.tool, other.tool],
      permissions: { deny: ["other"], ask: ["other(a)"] },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expect(deploy.runs).toEqual(["a"]);
  });
});

describe("ruleContent", () => {
  it("a throwing ruleContent fails closed: the call is denied, never run", async () => {
    const runs: string[] = [];
    const flaky = tool(
      "flaky",
      "Flaky",
      z.object({ target: z.string() }),
      async ({ target }) => {
        runs.push(target);
        return "ran";
      },
      {
        ruleContent: () => {
          throw new Error("cannot describe");
        },
      },
    );
    const model = scriptedModel([
      { toolCalls: [{ id: "f1", name: "flaky", input: { target: "x" } }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      tools: [flaky],
      permissions: { deny: ["flaky(x*)"] },
    }).run("go");
    expectErrorResult(result.messages, "f1");
    expect(failureReason(result, "f1")).toBe("denied");
    expect(runs).toEqual([]);
  });

  it("matches the validated (coerced) input, and its wildcards span any characters", async () => {
    const runs: number[] = [];
    const scale = tool(
      "scale",
      "Scale",
      z.object({ replicas: z.number(), env: z.string() }),
      async ({ replicas }) => {
        runs.push(replicas);
        return "ok";
      },
      { ruleContent: (input) => `${input.env}:${input.replicas}` },
    );
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "scale", input: { replicas: "100", env: "prod/eu" } },
          { id: "b", name: "scale", input: { replicas: 3, env: "dev" } },
        ],
      },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      tools: [scale],
      permissions: { deny: ["scale(prod*:100)"] },
    }).run("go");
    expectErrorResult(result.messages, "a", /denied/i);
    expectOkResult(result.messages, "b");
    expect(runs).toEqual([3]);
  });
});

describe("tool-name wildcards (mcp__server__*)", () => {
  function mcpTools() {
    return [
      countingTool("mcp__server__read", { ruleContent: false }),
      countingTool("mcp__server__write", { ruleContent: false }),
      countingTool("mcp__other__read", { ruleContent: false }),
    ];
  }
  function script() {
    return scriptedModel([
      {
        toolCalls: [
          { id: "s1", name: "mcp__server__read", input: { target: "a" } },
          { id: "s2", name: "mcp__server__write", input: { target: "b" } },
          { id: "o1", name: "mcp__other__read", input: { target: "c" } },
        ],
      },
      { text: "done" },
    ]);
  }

  it("a wildcard deny hides every matching tool, and their calls get error results", async () => {
    const tools = mcpTools();
    const model = script();
    const result = await createBareAgent({
      model,
      tools: tools.map((entry) => entry.tool),
      permissions: { deny: ["mcp__server__*"] },
    }).run("go");
    expect(offeredTools(model)).toEqual(["mcp__other__read"]);
    expectErrorResult(result.messages, "s1");
    expectErrorResult(result.messages, "s2");
    expectOkResult(result.messages, "o1");
    expect(tools.map((entry) => entry.runs.length)).toEqual([0, 0, 1]);
  });

  it("a wildcard ask pauses every matching call", async () => {
    const tools = mcpTools();
    const result = await createBareAgent({
      model: script(),
      tools: tools.map((entry) => entry.tool),
      permissions: { ask: ["mcp__server__*"] },
    }).run("go");
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => call.id)).toEqual(["s1", "s2"]);
    expect(tools.map((entry) => entry.runs.length)).toEqual([0, 0, 0]);
  });

  it("wildcards in allowedTools and disallowedTools filter what the model sees", async () => {
    const shown = script();
    await createBareAgent({
      model: shown,
      tools: mcpTools().map((entry) => entry.tool),
      allowedTools: ["mcp__server__*"],
    }).run("go");
    expect(offeredTools(shown)).toEqual(["mcp__server__read", "mcp__server__write"]);

    const hidden = script();
    await createBareAgent({
      model: hidden,
      tools: mcpTools().map((entry) => entry.tool),
      disallowedTools: ["mcp__server__*"],
    }).run("go");
    expect(offeredTools(hidden)).toEqual(["mcp__other__read"]);
  });
});

describe("malformed rules are assembly errors that say how to write a rule", () => {
  const plain = () => countingTool("deploy").tool;
  const cases: [string, unknown][] = [
    ["an unclosed parenthesis", "Bash(("],
    ["an empty string", ""],
    ["an empty pattern", "Bash()"],
    ["a number", 42],
    ["spaces in the name", "Bash tool"],
    ["null", null],
  ];
  for (const behavior of ["allow", "ask", "deny"] as const) {
    for (const [what, rule] of cases) {
      it(`permissions.${behavior}: ${what}`, () => {
        const build = () =>
          createBareAgent({
            model: scriptedModel([]),
            tools: [plain()],
            permissions: { [behavior]: [rule] } as AgentOptions["permissions"],
          });
        expect(build).toThrow(ConfigurationError);
        // Names where the rule is, and shows the shape of a valid one.
        expect(build).toThrow(`permissions.${behavior}[0]`);
        expect(build).toThrow(/"Bash\(npm run test:\*\)"|bare tool name/);
      });
    }
  }

  it("a malformed Tool(pattern) entry in disallowedTools, named as such", () => {
    const build = () =>
      createBareAgent({
        model: scriptedModel([]),
        tools: [plain()],
        permissions: { deny: ["deploy(x)"] },
        disallowedTools: ["Bash(("],
      });
    expect(build).toThrow(ConfigurationError);
    expect(build).toThrow(/"Bash\(npm run test:\*\)"/);
    // The message must point at the option that holds the bad rule, not at permissions.deny.
    expect(build).toThrow(/disallowedTools/);
  });

  it("a non-string entry in allowedTools or disallowedTools", () => {
    for (const key of ["allowedTools", "disallowedTools"] as const) {
      const build = () =>
        createBareAgent({
          model: scriptedModel([]),
          tools: [plain()],
          [key]: [7] as unknown as string[],
        });
      expect(build).toThrow(ConfigurationError);
      expect(build).toThrow(key);
    }
  });

  it("permissions with an unknown key", () => {
    const build = () =>
      createBareAgent({
        model: scriptedModel([]),
        tools: [plain()],
        permissions: { bogus: [] } as unknown as AgentOptions["permissions"],
      });
    expect(build).toThrow(ConfigurationError);
    expect(build).toThrow('unknown option "bogus"');
  });

  it("a rule list that is not an array", () => {
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        tools: [plain()],
        permissions: { deny: "Bash" as unknown as string[] },
      }),
    ).toThrow(/permissions\.deny must be an array/);
  });

  it("a pattern rule naming a custom tool without ruleContent, naming the tool", () => {
    const bare = tool("notes", "Notes", z.object({ text: z.string() }), async () => "ok");
    for (const behavior of ["allow", "ask", "deny"] as const) {
      const build = () =>
        createBareAgent({
          model: scriptedModel([]),
          tools: [bare],
          permissions: { [behavior]: ["notes(secret*)"] },
        });
      expect(build).toThrow(ConfigurationError);
      expect(build).toThrow(/"notes".*ruleContent/s);
    }
    // As a deny rule given through disallowedTools too.
    expect(() =>
      createBareAgent({ model: scriptedModel([]), tools: [bare], disallowedTools: ["notes(x)"] }),
    ).toThrow(ConfigurationError);
    // The bare name is fine.
    expect(() =>
      createBareAgent({ model: scriptedModel([]), tools: [bare], permissions: { ask: ["notes"] } }),
    ).not.toThrow();
  });

  it("a rule for a tool the agent does not have is an assembly error naming the closest tool", () => {
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        tools: [plain()],
        permissions: { deny: ["read_file(x)"] },
      }),
    ).toThrow(
      'AgentOptions: permissions.deny[0]: the rule "read_file(x)" names the tool "read_file", which this agent does not have',
    );
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        tools: [plain()],
        permissions: { ask: ["deplyo"] },
      }),
    ).toThrow('did you mean "deploy"?');
  });

  it("wildcard rule names and unknown names in allowedTools/disallowedTools are accepted", () => {
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        tools: [plain()],
        permissions: { deny: ["mcp__nowhere__*"] },
        allowedTools: ["deploy", "read_file"],
        disallowedTools: ["nothing_here"],
      }),
    ).not.toThrow();
  });
});

// Permission modes (design/policy.md): the decision table (mode x tool x path x rule), switching
// while a run works, pause/resume, a child under the stricter mode, the hardened preset.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type AgentEvent,
  type AgentOptions,
  agentTool,
  ConfigurationError,
  createAgent,
  createBareAgent,
  memoryStore,
  type PermissionMode,
  type SDKResultMessage,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { failureReason } from "../permissions/helpers.ts";
import { deferred } from "../support/promises.ts";
import { useTempDirs } from "../support/temp.ts";
import { countingTool } from "../support/tools.ts";

const tempDir = useTempDirs("skein-modes-");
const MODES: PermissionMode[] = ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"];

type Outcome = "ran" | "asked" | "denied";

/** How the one call `c1` of a run ended. */
function outcomeOf(result: SDKResultMessage): Outcome {
  if (result.subtype === "paused" && result.pending?.some((call) => call.id === "c1"))
    return "asked";
  // Past the gate: what the tool itself did with the call is not the mode's business.
  return failureReason(result, "c1") === "denied" ? "denied" : "ran";
}

// tool (with its input) x path x rule -> outcome per mode, in the order of MODES:
// default, acceptEdits, plan, dontAsk, bypassPermissions. Written out from the contract.
const TABLE: [string, string, string, [Outcome, Outcome, Outcome, Outcome, Outcome]][] = [
  ["Read", "a.txt", "", ["ran", "ran", "ran", "ran", "ran"]],
  ["Read", "a.txt", "ask:Read(a.txt)", ["asked", "asked", "asked", "denied", "ran"]],
  ["Read", "a.txt", "deny:Read(a.txt)", ["denied", "denied", "denied", "denied", "denied"]],
  ["Write", "b.txt", "", ["asked", "ran", "denied", "denied", "ran"]],
  ["Write", "b.txt", "allow:Write", ["ran", "ran", "denied", "ran", "ran"]],
  ["Write", "b.txt", "ask:Write(b.txt)", ["asked", "asked", "denied", "denied", "ran"]],
  ["Write", "b.txt", "deny:Write(b.txt)", ["denied", "denied", "denied", "denied", "denied"]],
  ["Write", ".git/config", "", ["asked", "asked", "denied", "denied", "asked"]],
  ["Write", ".git/config", "allow:Write", ["asked", "asked", "denied", "denied", "asked"]],
  ["Edit", "a.txt", "", ["asked", "ran", "denied", "denied", "ran"]],
  ["Bash", "ls", "", ["asked", "asked", "denied", "denied", "ran"]],
  ["Bash", "ls", "allow:Bash(ls)", ["ran", "ran", "denied", "ran", "ran"]],
  ["Bash", "echo hi > c.txt", "", ["asked", "asked", "denied", "denied", "ran"]],
  ["Bash", "echo hi > c.txt", "allow:Bash", ["ran", "ran", "denied", "ran", "ran"]],
  [
    "Bash",
    "echo hi > c.txt",
    "deny:Bash(echo:*)",
    ["denied", "denied", "denied", "denied", "denied"],
  ],
  ["Bash", "echo hi > OUTSIDE", "", ["asked", "asked", "denied", "denied", "denied"]],
  ["deploy", "x", "", ["ran", "ran", "denied", "ran", "ran"]],
  ["deploy", "x", "ask:deploy", ["asked", "asked", "denied", "denied", "ran"]],
  ["deploy", "x", "deny:deploy(x)", ["denied", "denied", "denied", "denied", "denied"]],
  ["lookup", "x", "", ["ran", "ran", "ran", "ran", "ran"]],
  ["lookup", "x", "ask:lookup", ["asked", "asked", "asked", "denied", "ran"]],
];

function inputFor(tool: string, path: string, outside: string): Record<string, unknown> {
  switch (tool) {
    case "Read":
      return { file_path: path };
    case "Write":
      return { file_path: path, content: "new" };
    case "Edit":
      return { file_path: path, old_string: "old", new_string: "new" };
    case "Bash":
      return { command: path.replace("OUTSIDE", join(outside, "out.txt")) };
    default:
      return { target: path };
  }
}

async function runCase(tool: string, path: string, rule: string, mode: PermissionMode) {
  const root = await tempDir();
  const outside = await tempDir();
  writeFileSync(join(root, "a.txt"), "old");
  const deploy = countingTool("deploy");
  const lookup = countingTool("lookup", { security: { network: "none", sideEffects: "none" } });
  const model = scriptedModel([
    { toolCalls: [{ id: "c1", name: tool, input: inputFor(tool, path, outside) }] },
    { text: "done" },
  ]);
  const at = rule.indexOf(":");
  const [behavior, text] = at > 0 ? [rule.slice(0, at), rule.slice(at + 1)] : [];
  const options: AgentOptions = {
    model,
    cwd: root,
    tools: [deploy.tool, lookup.tool],
    permissionMode: mode,
    ...(behavior ? { permissions: { [behavior]: [text] } } : {}),
  };
  const agent = createAgent(options);
  const result = await agent.run("go");
  await agent.close();
  return { result, outsideWritten: existsSync(join(outside, "out.txt")) };
}

describe("the decision table (mode x tool x path x rule)", () => {
  for (const [tool, path, rule, expected] of TABLE) {
    it(`${tool} ${path} ${rule || "(no rule)"}`, async () => {
      const seen: Outcome[] = [];
      for (const mode of MODES) {
        const { result, outsideWritten } = await runCase(tool, path, rule, mode);
        seen.push(outcomeOf(result));
        expect(outsideWritten, `${mode}: nothing is written outside the workspace`).toBe(false);
      }
      expect(Object.fromEntries(MODES.map((m, i) => [m, seen[i]]))).toEqual(
        Object.fromEntries(MODES.map((m, i) => [m, expected[i]])),
      );
    });
  }

  it("plan's error result says the agent is planning", async () => {
    const { result } = await runCase("Write", "b.txt", "", "plan");
    const call = result.steps[0]!.toolCalls[0]!;
    expect(call.result.content).toMatch(/planning/);
  });
});

describe("switching the mode while a run works", () => {
  it("takes effect from the next call, is logged, kept in the paused state and on resume", async () => {
    const root = await tempDir();
    const store = memoryStore();
    const deploy = countingTool("deploy");
    const switched = deferred();
    const model = scriptedModel(async (_request, index) => {
      if (index === 0) return { toolCalls: [{ id: "c1", name: "deploy", input: { target: "a" } }] };
      if (index === 1) {
        await switched.promise;
        return { toolCalls: [{ id: "c2", name: "deploy", input: { target: "b" } }] };
      }
      if (index === 2)
        return {
          toolCalls: [{ id: "c3", name: "Write", input: { file_path: "b.txt", content: "x" } }],
        };
      return { text: "done" };
    });
    const agent = createAgent({
      model,
      cwd: root,
      tools: [deploy.tool],
      sessionStore: store,
      permissions: { ask: ["deploy(b)"] },
    });
    const run = agent.stream("go", { sessionId: "s1" });
    const events: AgentEvent[] = [];
    let paused: SDKResultMessage | undefined;
    for await (const event of run) {
      events.push(event);
      if (event.type === "tool_end" && event.callId === "c1") {
        run.setPermissionMode("acceptEdits");
        switched.resolve();
      }
      if (event.type === "result") paused = event;
    }
    expect(deploy.runs).toEqual(["a"]);
    expect(events.find((e) => e.type === "permission_mode")).toMatchObject({
      mode: "acceptEdits",
      previous: "default",
    });
    // acceptEdits keeps an explicit ask rule's ask.
    expect(paused!.subtype).toBe("paused");
    expect(paused!.state!.permissionMode).toBe("acceptEdits");
    const logged = (await store.read("s1")).map((row) => JSON.parse(row.data));
    expect(logged.filter((entry) => entry.type === "mode").map((e) => e.mode)).toEqual([
      "acceptEdits",
    ]);
    // Resumed from the store: still acceptEdits, so the Write of the next reply runs unasked.
    const resumed = await agent.resume({ sessionId: "s1" }, { approvals: { c2: true } });
    expect(resumed.pending ?? []).toEqual([]);
    expect(resumed.subtype).toBe("success");
    expect(deploy.runs).toEqual(["a", "b"]);
    expect(existsSync(join(root, "b.txt"))).toBe(true);
  });

  it("an unknown mode is a ConfigurationError naming it, wherever it is given", async () => {
    const model = scriptedModel([{ text: "hi" }]);
    expect(() => createAgent({ model, permissionMode: "yolo" as PermissionMode })).toThrow(
      /permissionMode "yolo" is not a permission mode/,
    );
    const agent = createAgent({ model });
    await expect(agent.run("go", { permissionMode: "auto" as PermissionMode })).rejects.toThrow(
      ConfigurationError,
    );
    const run = agent.stream("go");
    expect(() => run.setPermissionMode("nope" as PermissionMode)).toThrow(/"nope"/);
    for await (const _ of run);
  });

  it("bypassPermissions is refused under the hardened preset: option, run option, switch", async () => {
    const model = scriptedModel([{ text: "hi" }, { text: "hi" }]);
    expect(() =>
      createAgent({ model, preset: "hardened", permissionMode: "bypassPermissions" }),
    ).toThrow(/refused under the hardened preset/);
    const agent = createAgent({ model, preset: "hardened" });
    await expect(agent.run("go", { permissionMode: "bypassPermissions" })).rejects.toThrow(
      /hardened/,
    );
    const run = agent.stream("go");
    let thrown: unknown;
    for await (const event of run) {
      if (event.type === "run_start") {
        try {
          run.setPermissionMode("bypassPermissions");
        } catch (error) {
          thrown = error;
        }
      }
    }
    expect(thrown).toBeInstanceOf(ConfigurationError);
  });
});

describe("a child runs under the stricter of its mode and its parent's", () => {
  function tree(parentMode: PermissionMode, childMode: PermissionMode) {
    const deploy = countingTool("deploy");
    const childModel = scriptedModel([
      { toolCalls: [{ id: "k1", name: "deploy", input: { target: "child" } }] },
      { text: "child done" },
    ]);
    const child = createBareAgent({
      id: "helper",
      model: childModel,
      tools: [deploy.tool],
      permissionMode: childMode,
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "p1", name: "deploy", input: { target: "parent" } },
          { id: "p2", name: "helper", input: { prompt: "work" } },
        ],
      },
      { text: "done" },
    ]);
    const parent = createBareAgent({
      model,
      tools: [deploy.tool, agentTool(child, { description: "Helps" })],
      permissionMode: parentMode,
    });
    return { parent, deploy };
  }

  it("a parent in plan holds a child in default to plan", async () => {
    const { parent, deploy } = tree("plan", "default");
    const result = await parent.run("go");
    expect(result.subtype).toBe("success");
    expect(deploy.runs).toEqual([]);
  });

  it("a child in plan stays in plan under a parent in bypassPermissions", async () => {
    const { parent, deploy } = tree("bypassPermissions", "plan");
    await parent.run("go");
    expect(deploy.runs).toEqual(["parent"]);
  });
});

describe("200 injected commands under dontAsk and plan", () => {
  /** Commands that each try to leave a marker file, in the shapes an injection would take. */
  function injected(count: number): string[] {
    const shapes = [
      (m: string) => `touch ${m}`,
      (m: string) => `echo pwned > ${m}`,
      (m: string) => `cp a.txt ${m}`,
      (m: string) => `sh -c 'touch ${m}'`,
      (m: string) => `bash -c "echo x >> ${m}"`,
      (m: string) => `ls; touch ${m}`,
      (m: string) => `cat a.txt | tee ${m}`,
      (m: string) => `python3 -c "open('${m}','w')"`,
      (m: string) => `node -e "require('fs').writeFileSync('${m}','x')"`,
      (m: string) => `$(echo touch) ${m}`,
      (m: string) => `env touch ${m}`,
      (m: string) => `find . -maxdepth 0 -exec touch ${m} \\;`,
      (m: string) => `git init -q && touch ${m}`,
      (m: string) => `printf x | dd of=${m}`,
      (m: string) => `ls && echo x > ${m}`,
      (m: string) => `true || true; mkdir ${m}`,
      (m: string) => `xargs touch <<< ${m}`,
      (m: string) => `awk 'BEGIN{print 1 > "${m}"}'`,
      (m: string) => `sed -n w${m} a.txt`,
      (m: string) => `ln -s a.txt ${m}`,
    ];
    return Array.from({ length: count }, (_, i) => shapes[i % shapes.length]!(`m${i}`));
  }

  for (const mode of ["dontAsk", "plan"] as const) {
    it(`${mode}: none of 200 runs a command the mode forbids`, async () => {
      const root = await tempDir();
      writeFileSync(join(root, "a.txt"), "data");
      const commands = injected(200);
      const marked = countingTool("mark");
      const script = [];
      for (let i = 0; i < commands.length; i += 20)
        script.push({
          toolCalls: [
            ...commands.slice(i, i + 20).map((command, j) => ({
              id: `b${i + j}`,
              name: "Bash",
              input: { command },
            })),
            { id: `k${i}`, name: "mark", input: { target: `k${i}` } },
          ],
        });
      script.push({ text: "done" });
      const agent = createAgent({
        model: scriptedModel(script),
        cwd: root,
        tools: [marked.tool],
        permissionMode: mode,
        // A broad allow that dontAsk must not widen, and plan must not honour for Bash.
        permissions: { allow: ["Bash(ls)", "mark"] },
      });
      const result = await agent.run("go");
      await agent.close();
      expect(result.subtype).toBe("success");
      const ran = result.steps.flatMap((step) =>
        step.toolCalls.filter((call) => call.name === "Bash" && !call.isError),
      );
      expect(ran.map((call) => call.input)).toEqual([]);
      for (let i = 0; i < 200; i++)
        expect(existsSync(join(root, `m${i}`)), `marker m${i}`).toBe(false);
      // The custom tool has side effects unless it says otherwise: plan refuses it, dontAsk
      // runs it (an allow rule names it).
      expect(marked.runs.length).toBe(mode === "plan" ? 0 : 10);
    });
  }
});

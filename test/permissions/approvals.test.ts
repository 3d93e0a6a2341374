import { AbortError, type AgentOptions, createBareAgent, type PermissionResult } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { deferred, rejectionOf } from "../support/promises.ts";
import { expectValidTranscript, resultFor, resultText } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { drain, expectErrorResult, expectOkResult, failureReason } from "./helpers.ts";

/** `deploy` asks for every call (an ask rule); `note` is a plain custom tool (allowed). */
function setup(
  calls: { id: string; name?: string; target: string }[],
  options: Partial<AgentOptions> = {},
) {
  const deploy = countingTool("deploy");
  const note = countingTool("note");
  const model = scriptedModel([
    {
      toolCalls: calls.map((call) => ({
        id: call.id,
        name: call.name ?? "deploy",
        input: { target: call.target },
      })),
    },
    { text: "done" },
  ]);
  const agentOptions: AgentOptions = {
    model,
    tools: [deploy.tool, note.tool],
    permissions: { ask: ["deploy"], deny: ["deploy(prod*)"] },
    ...options,
  };
  return { deploy, note, model, agentOptions };
}

describe("the approval handler's answers", () => {
  it("true runs the call", async () => {
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: () => true,
    });
    const result = await createBareAgent(agentOptions).run("go");
    expect(result.subtype).toBe("success");
    expectOkResult(result.messages, "d1", "deploy ran on staging");
    expect(deploy.runs).toEqual(["staging"]);
  });

  it('{ behavior: "allow" } runs the call with its input', async () => {
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: async () => ({ behavior: "allow" }),
    });
    await createBareAgent(agentOptions).run("go");
    expect(deploy.runs).toEqual(["staging"]);
  });

  it("false denies: an error result, the handler never runs, the loop goes on", async () => {
    const { deploy, model, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: () => false,
    });
    const result = await createBareAgent(agentOptions).run("go");
    expect(result.subtype).toBe("success");
    expect(model.requests).toHaveLength(2);
    expectErrorResult(result.messages, "d1", /denied/i);
    expect(failureReason(result, "d1")).toBe("denied");
    expect(deploy.runs).toEqual([]);
  });

  it('{ behavior: "deny", message } denies with the message in the error result', async () => {
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: () => ({ behavior: "deny", message: "no deploys on Friday" }),
    });
    const result = await createBareAgent(agentOptions).run("go");
    expectErrorResult(result.messages, "d1", "no deploys on Friday");
    expect(deploy.runs).toEqual([]);
  });

  it("a throwing handler denies (B14), never allows", async () => {
    const { deploy, agentOptions } = setup(
      [
        { id: "d1", target: "a" },
        { id: "d2", target: "b" },
      ],
      {
        approval: async (_name, input) => {
          if ((input as { target: string }).target === "a") throw new Error("approval UI crashed");
          throw "a string";
        },
      },
    );
    const result = await createBareAgent(agentOptions).run("go");
    expect(result.subtype).toBe("success");
    expectErrorResult(result.messages, "d1", /denied/i);
    expectErrorResult(result.messages, "d2", /denied/i);
    expect(deploy.runs).toEqual([]);
  });

  const garbage: [string, unknown][] = [
    ["undefined", undefined],
    ["null", null],
    ['the string "true"', "true"],
    ["the number 1", 1],
    ["an empty object", {}],
    ['{ behavior: "maybe" }', { behavior: "maybe" }],
    ['{ behavior: "ALLOW" }', { behavior: "ALLOW" }],
    ["{ allow: true }", { allow: true }],
    ["an array", [true]],
  ];
  for (const [what, answer] of garbage) {
    it(`a handler answering ${what} denies`, async () => {
      const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
        approval: () => answer as PermissionResult,
      });
      const result = await createBareAgent(agentOptions).run("go");
      expectErrorResult(result.messages, "d1");
      expect(failureReason(result, "d1")).toBe("denied");
      expect(deploy.runs).toEqual([]);
    });
  }

  it("is not asked for allowed or denied calls", async () => {
    const asked: string[] = [];
    const { deploy, note, agentOptions } = setup(
      [
        { id: "n1", name: "note", target: "x" },
        { id: "d1", target: "prod-eu" },
      ],
      {
        approval: (_name, _input, { callId }) => {
          asked.push(callId);
          return true;
        },
      },
    );
    const result = await createBareAgent(agentOptions).run("go");
    expect(asked).toEqual([]);
    expect(note.runs).toEqual(["x"]);
    expectErrorResult(result.messages, "d1", /denied/i);
    expect(deploy.runs).toEqual([]);
  });
});

describe("what the handler is given", () => {
  it("(name, validated input, { signal, callId, sessionId, reason }) with a non-empty reason", async () => {
    const seen: unknown[] = [];
    const { agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: (name, input, options) => {
        seen.push({ name, input, options });
        return true;
      },
    });
    await createBareAgent(agentOptions).run("go", { sessionId: "session-42" });
    expect(seen).toHaveLength(1);
    const { name, input, options } = seen[0] as {
      name: string;
      input: unknown;
      options: { signal: unknown; callId: string; sessionId: string; reason: unknown };
    };
    expect(name).toBe("deploy");
    expect(input).toEqual({ target: "staging" });
    expect(options.signal).toBeInstanceOf(AbortSignal);
    expect(options.callId).toBe("d1");
    expect(options.sessionId).toBe("session-42");
    expect(typeof options.reason).toBe("string");
    expect((options.reason as string).trim()).not.toBe("");
  });

  it("asks in call order, one call at a time", async () => {
    const trace: string[] = [];
    let inside = 0;
    let peak = 0;
    const first = deferred<boolean>();
    const { deploy, agentOptions } = setup(
      [
        { id: "d1", target: "a" },
        { id: "d2", target: "b" },
        { id: "d3", target: "c" },
      ],
      {
        approval: async (_name, _input, { callId }) => {
          trace.push(`ask:${callId}`);
          inside++;
          peak = Math.max(peak, inside);
          try {
            if (callId === "d1") return await first.promise;
            await drain();
            return true;
          } finally {
            inside--;
          }
        },
      },
    );
    const running = createBareAgent(agentOptions).run("go");
    await drain();
    await drain();
    // The second call is not asked while the first is waiting for its answer.
    expect(trace).toEqual(["ask:d1"]);
    first.resolve(true);
    const result = await running;
    expect(trace).toEqual(["ask:d1", "ask:d2", "ask:d3"]);
    expect(peak).toBe(1);
    expect(deploy.runs.sort()).toEqual(["a", "b", "c"]);
    expect(result.subtype).toBe("success");
  });
});

describe("updatedInput", () => {
  it("is what runs", async () => {
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: () => ({ behavior: "allow", updatedInput: { target: "canary" } }),
    });
    const result = await createBareAgent(agentOptions).run("go");
    expectOkResult(result.messages, "d1", "deploy ran on canary");
    expect(deploy.runs).toEqual(["canary"]);
    expect(result.steps[0]!.toolCalls[0]!.input).toEqual({ target: "canary" });
  });

  it("is validated: an invalid one is an error result and nothing runs", async () => {
    for (const updatedInput of [{ target: 5 }, { wrong: "x" }, "staging", null]) {
      const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
        approval: () => ({ behavior: "allow", updatedInput }),
      });
      const result = await createBareAgent(agentOptions).run("go");
      expectErrorResult(result.messages, "d1");
      expect(deploy.runs, JSON.stringify(updatedInput)).toEqual([]);
    }
  });

  it("is checked against the deny rules again (C17b)", async () => {
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: () => ({ behavior: "allow", updatedInput: { target: "prod-eu" } }),
    });
    const result = await createBareAgent(agentOptions).run("go");
    expectErrorResult(result.messages, "d1", /denied/i);
    expect(failureReason(result, "d1")).toBe("denied");
    expect(deploy.runs).toEqual([]);
  });
});

describe("abort while an approval is pending (C17c)", () => {
  it("rejects with AbortError, runs nothing more, and leaves every tool_use answered", async () => {
    const controller = new AbortController();
    const asked = deferred();
    const { deploy, note, agentOptions } = setup(
      [
        { id: "n1", name: "note", target: "before" },
        { id: "d1", target: "staging" },
        { id: "n2", name: "note", target: "after" },
      ],
      {
        // Never answers by itself: only the abort ends the wait.
        approval: () => {
          asked.resolve();
          return new Promise<PermissionResult>(() => {});
        },
      },
    );
    const running = createBareAgent(agentOptions).run("go", { signal: controller.signal });
    await asked.promise;
    controller.abort();
    const error = (await rejectionOf(running)) as AbortError;
    expect(error.name).toBe("AbortError");
    expect(error).toBeInstanceOf(AbortError);
    expect(deploy.runs).toEqual([]);
    expect(note.runs).not.toContain("after");
    expectValidTranscript(error.messages);
    expect(resultFor(error.messages, "d1").is_error).toBe(true);
    expect(resultFor(error.messages, "n2").is_error).toBe(true);
  });

  it("an approval that resolves true after the abort does not run the call", async () => {
    const controller = new AbortController();
    const asked = deferred();
    const answer = deferred<boolean>();
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: () => {
        asked.resolve();
        return answer.promise;
      },
    });
    const running = createBareAgent(agentOptions).run("go", { signal: controller.signal });
    await asked.promise;
    controller.abort();
    answer.resolve(true);
    const error = await rejectionOf(running);
    expect(error.name).toBe("AbortError");
    await drain();
    expect(deploy.runs).toEqual([]);
  });

  it("the handler sees the run's signal abort", async () => {
    const controller = new AbortController();
    const asked = deferred<AbortSignal>();
    const { agentOptions } = setup([{ id: "d1", target: "staging" }], {
      approval: (_name, _input, { signal }) => {
        asked.resolve(signal);
        return new Promise<PermissionResult>((resolve) =>
          signal.addEventListener("abort", () => resolve(true)),
        );
      },
    });
    const running = createBareAgent(agentOptions).run("go", { signal: controller.signal });
    const signal = await asked.promise;
    expect(signal.aborted).toBe(false);
    controller.abort();
    expect(signal.aborted).toBe(true);
    expect((await rejectionOf(running)).name).toBe("AbortError");
  });
});

describe("beforeToolCall hooks and the gate (C17a)", () => {
  it("the gate checks the hook's rewritten input: a rewrite into a denied call is denied", async () => {
    const asked: string[] = [];
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      hooks: { beforeToolCall: () => ({ input: { target: "prod-eu" } }) },
      approval: (_name, _input, { callId }) => {
        asked.push(callId);
        return true;
      },
    });
    const result = await createBareAgent(agentOptions).run("go");
    expectErrorResult(result.messages, "d1", /denied/i);
    expect(asked).toEqual([]);
    expect(deploy.runs).toEqual([]);
  });

  it("a hook answering 'allow' in any shape does not lift a deny", async () => {
    const answers = [
      { behavior: "allow" },
      { allow: true },
      { decision: "approve" },
      { permissionDecision: "allow" },
      { block: false },
    ];
    for (const answer of answers) {
      const { deploy, agentOptions } = setup([{ id: "d1", target: "prod-eu" }], {
        hooks: { beforeToolCall: () => answer as never },
        approval: () => true,
      });
      const result = await createBareAgent(agentOptions).run("go");
      expectErrorResult(result.messages, "d1", /denied/i);
      expect(deploy.runs, JSON.stringify(answer)).toEqual([]);
    }
  });

  it("the approval handler is shown the hook's rewritten input", async () => {
    const shown: unknown[] = [];
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      hooks: { beforeToolCall: () => ({ input: { target: "canary" } }) },
      approval: (_name, input) => {
        shown.push(input);
        return true;
      },
    });
    await createBareAgent(agentOptions).run("go");
    expect(shown).toEqual([{ target: "canary" }]);
    expect(deploy.runs).toEqual(["canary"]);
  });

  it("a call a hook blocks is never sent for approval", async () => {
    const asked: string[] = [];
    const { deploy, agentOptions } = setup([{ id: "d1", target: "staging" }], {
      hooks: { beforeToolCall: () => ({ block: true, reason: "frozen" }) },
      approval: (_name, _input, { callId }) => {
        asked.push(callId);
        return true;
      },
    });
    const result = await createBareAgent(agentOptions).run("go");
    expect(resultText(resultFor(result.messages, "d1"))).toContain("frozen");
    expect(asked).toEqual([]);
    expect(deploy.runs).toEqual([]);
  });
});

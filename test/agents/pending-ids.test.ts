// Pending ids are unambiguous across the tree (design/agents.md, approval paragraphs): a nested
// call whose id another waiting call shares is listed, and answered, as "<parentCallId>/<id>".
import { agentTool, createBareAgent, ResumeError, type RunState } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { countingTool } from "../support/tools.ts";

describe("ids shared across the tree (scripted default ids collide: toolu_1_1 at every level)", () => {
  /** Agents whose model makes one default-id call of `tool`, then answers. */
  function asking(
    id: string,
    tool: string,
    input: unknown,
    tools: ReturnType<typeof countingTool>["tool"][],
  ) {
    return createBareAgent({
      id,
      model: scriptedModel([{ toolCalls: [{ name: tool, input }] }, { text: `${id} done` }]),
      tools,
    });
  }

  it("a parent's own waiting call and a child's share an id: the child's is listed as parentCallId/id", async () => {
    const risky = countingTool("risky");
    const child = asking("child", "risky", { target: "child" }, [risky.tool]);
    const root = createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "p1", name: "child", input: { prompt: "x" } },
            { id: "toolu_1_1", name: "risky", input: { target: "root" } },
          ],
        },
        { text: "root done" },
      ]),
      tools: [risky.tool, agentTool(child, { description: "C" })],
      permissions: { ask: ["risky"] },
    });
    const result = await root.run("go");
    const ids = result.pending?.map((call) => call.id);
    expect(ids?.sort()).toEqual(["p1/toolu_1_1", "toolu_1_1"]);
    const resumed = await root.resume(JSON.parse(JSON.stringify(result.state)), {
      approvals: { toolu_1_1: true, "p1/toolu_1_1": { behavior: "deny", message: "no" } },
    });
    expect(resumed.subtype).toBe("success");
    expect(risky.runs).toEqual(["root"]);
  });

  it("two children waiting with the same id: both qualified, each answered on its own", async () => {
    const risky = countingTool("risky");
    const safe = { isConcurrencySafe: () => true };
    const root = createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "p1", name: "a", input: { prompt: "x" } },
            { id: "p2", name: "b", input: { prompt: "x" } },
          ],
        },
        { text: "root done" },
      ]),
      tools: [
        agentTool(asking("a", "risky", { target: "a" }, [risky.tool]), {
          description: "A",
          ...safe,
        }),
        agentTool(asking("b", "risky", { target: "b" }, [risky.tool]), {
          description: "B",
          ...safe,
        }),
      ],
      permissions: { ask: ["risky"] },
    });
    const result = await root.run("go");
    expect(result.pending?.map((call) => call.id).sort()).toEqual(["p1/toolu_1_1", "p2/toolu_1_1"]);
    const state = JSON.parse(JSON.stringify(result.state)) as RunState;
    // The bare id is ambiguous: refused, naming the qualified forms.
    const error = await rejectionOf(root.resume(state, { approvals: { toolu_1_1: true } }));
    expect(error).toBeInstanceOf(ResumeError);
    expect(error.message).toContain("p1/toolu_1_1");
    expect(risky.runs).toEqual([]);
    const resumed = await root.resume(state, {
      approvals: { "p1/toolu_1_1": true, "p2/toolu_1_1": false },
    });
    expect(resumed.subtype).toBe("success");
    expect(risky.runs).toEqual(["a"]);
  });

  it("two grandchildren waiting with the same id under child calls that share an id: every listed id is unique and usable", async () => {
    const risky = countingTool("risky");
    const safe = { isConcurrencySafe: () => true };
    const middle = (id: string) =>
      createBareAgent({
        id,
        model: scriptedModel([
          { toolCalls: [{ name: "deeper", input: { prompt: "x" } }] },
          { text: `${id} done` },
        ]),
        tools: [
          agentTool(asking(`under-${id}`, "risky", { target: id }, [risky.tool]), {
            name: "deeper",
            description: "D",
          }),
        ],
      });
    const root = createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "p1", name: "a", input: { prompt: "x" } },
            { id: "p2", name: "b", input: { prompt: "x" } },
          ],
        },
        { text: "root done" },
      ]),
      tools: [
        agentTool(middle("a"), { description: "A", ...safe }),
        agentTool(middle("b"), { description: "B", ...safe }),
      ],
      permissions: { ask: ["risky"] },
    });
    const result = await root.run("go");
    expect(result.subtype).toBe("paused");
    const ids = result.pending!.map((call) => call.id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    const first = result.pending!.find(
      (call) => (call.input as { target: string }).target === "a",
    )!;
    const resumed = await root.resume(JSON.parse(JSON.stringify(result.state)), {
      approvals: { [first.id]: true },
    });
    expect(resumed.subtype).toBe("success");
    expect(risky.runs).toEqual(["a"]);
  });
});

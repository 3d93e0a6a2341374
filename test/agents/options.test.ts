// Strict options of agentTool() and delegateTool() (seeds 000/001, "Strict option validation"),
// and metadata: passed through, absent when not given, never sent to any model.
import {
  type Agent,
  agentTool,
  ConfigurationError,
  createAgent,
  createBareAgent,
  defineAgent,
  delegateTool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { requestText, scriptedChild } from "./helpers.ts";

const UPGRADE = "Check for a typo, or upgrade the SDK if this option was added in a newer version.";

/** The ConfigurationError `build` throws (fails the test when it throws nothing or something else). */
function configError(build: () => unknown): ConfigurationError {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return error as ConfigurationError;
  }
  throw new Error("expected a ConfigurationError, but nothing was thrown");
}

const child = () => scriptedChild("researcher", [{ text: "found it" }]).agent;

describe("agentTool(): strict options", () => {
  it("an unknown option throws exactly the seed's message, with the tool's name", () => {
    const error = configError(() =>
      agentTool(child(), { name: "research", description: "Researches", bogus: 1 } as never),
    );
    expect(error.message).toBe(`agentTool("research"): unknown option "bogus". ${UPGRADE}`);
  });

  it("the name defaults to the agent's id, in the prefix too", () => {
    const error = configError(() =>
      agentTool(child(), { description: "Researches", bogus: 1 } as never),
    );
    expect(error.message).toBe(`agentTool("researcher"): unknown option "bogus". ${UPGRADE}`);
    expect(agentTool(child(), { description: "Researches" }).name).toBe("researcher");
  });

  it("a missing or empty description throws with the prefix", () => {
    for (const options of [{}, { description: "" }, { description: 5 }]) {
      const error = configError(() => agentTool(child(), options as never));
      expect(error.message).toMatch(/^agentTool\("researcher"\): /);
      expect(error.message).toMatch(/description/);
    }
  });

  it('no name and no agent id: "agentTool(): " names the missing name', () => {
    const anonymous = createBareAgent({ model: scriptedModel([]) });
    const error = configError(() => agentTool(anonymous, { description: "Does things" }));
    expect(error.message).toMatch(/^agentTool\(\): /);
    expect(error.message).toMatch(/name/);
    expect(agentTool(anonymous, { name: "anon", description: "Does things" }).name).toBe("anon");
  });

  it("a first argument that is not an agent or agent options throws", () => {
    for (const value of [null, 42, "researcher", [child()]]) {
      const error = configError(() =>
        agentTool(value as never, { name: "x", description: "Does things" }),
      );
      expect(error.message).toMatch(/^agentTool\("x"\): /);
      expect(error.message).toMatch(/agent/);
    }
  });

  it("an object skein did not make, with a run method, is refused as such", () => {
    const fake = { id: "fake", run: async () => ({}) } as unknown as Agent;
    const error = configError(() => agentTool(fake, { description: "Pretends" }));
    expect(error.message).toMatch(/^agentTool\("fake"\): /);
    expect(error.message).toMatch(/did not make/);
  });

  it("bad maxTurns (0, negative, fractional, a string) throws; a positive integer does not", () => {
    for (const maxTurns of [0, -1, 1.5, "3"]) {
      const error = configError(() =>
        agentTool(child(), { description: "Researches", maxTurns } as never),
      );
      expect(error.message).toMatch(/^agentTool\("researcher"\): maxTurns/);
    }
    expect(() => agentTool(child(), { description: "Researches", maxTurns: 2 })).not.toThrow();
  });

  it("a definition is checked strictly as AgentOptions, under the tool's prefix", () => {
    const error = configError(() =>
      agentTool({ id: "def", model: scriptedModel([]), bogusOption: 1 } as never, {
        description: "From a definition",
      }),
    );
    expect(error.message).toContain('agentTool("def")');
    expect(error.message).toContain(`AgentOptions: unknown option "bogusOption". ${UPGRADE}`);
  });

  it("a definition made by defineAgent is accepted", () => {
    const definition = defineAgent({ id: "defined", model: scriptedModel([{ text: "ok" }]) });
    expect(agentTool(definition, { description: "Defined" }).name).toBe("defined");
  });
});

describe("delegateTool(): strict options", () => {
  it("an unknown option throws exactly the seed's message with the default name", () => {
    const error = configError(() =>
      delegateTool({ researcher: child() }, { bogus: true } as never),
    );
    expect(error.message).toBe(`delegateTool("delegate"): unknown option "bogus". ${UPGRADE}`);
  });

  it("and with a given name", () => {
    const error = configError(() =>
      delegateTool({ researcher: child() }, { name: "assign", bogus: true } as never),
    );
    expect(error.message).toBe(`delegateTool("assign"): unknown option "bogus". ${UPGRADE}`);
  });

  it("an empty target map throws", () => {
    const error = configError(() => delegateTool({}));
    expect(error.message).toMatch(/^delegateTool\("delegate"\): /);
    expect(error.message).toMatch(/empty/);
  });

  it("target keys that are not tool-name-like throw, naming the key", () => {
    for (const key of ["has space", "a.b", "x".repeat(65)]) {
      const error = configError(() => delegateTool({ [key]: child() }));
      expect(error.message).toMatch(/^delegateTool\("delegate"\): /);
      expect(error.message).toContain(JSON.stringify(key));
    }
  });

  it("a target that is not an agent throws", () => {
    const error = configError(() => delegateTool({ researcher: 7 as never }));
    expect(error.message).toMatch(/^delegateTool\("delegate"\): /);
  });

  it("bad maxTurns throws", () => {
    for (const maxTurns of [0, 2.5]) {
      const error = configError(() => delegateTool({ researcher: child() }, { maxTurns }));
      expect(error.message).toMatch(/^delegateTool\("delegate"\): maxTurns/);
    }
  });

  it("a non-string description throws; none gives a generated one naming the targets", () => {
    const error = configError(() =>
      delegateTool({ researcher: child() }, { description: 1 as never }),
    );
    expect(error.message).toMatch(/^delegateTool\("delegate"\): /);
    const made = delegateTool({ researcher: child(), writer: child() });
    expect(made.description).toContain("researcher");
    expect(made.description).toContain("writer");
  });
});

describe("maxDepth on the agent options", () => {
  it("must be a positive integer (createAgent, createBareAgent, defineAgent)", () => {
    for (const maxDepth of [0, -2, 1.5, "3"]) {
      for (const make of [createAgent, createBareAgent, defineAgent]) {
        const error = configError(() => make({ model: scriptedModel([]), maxDepth } as never));
        expect(error.message).toMatch(/maxDepth must be a positive integer/);
      }
    }
    expect(() => createAgent({ model: scriptedModel([]), maxDepth: 1 })).not.toThrow();
  });
});

describe('metadata (seeds 000/001, "Tool metadata")', () => {
  const metadata = { contract: "v7-METADATA-MARKER", owner: { team: "docs" } };

  it("is passed through as given, and absent when not given (both factories)", () => {
    const withIt = agentTool(child(), { description: "Researches", metadata });
    expect(withIt.metadata).toEqual(metadata);
    const without = agentTool(child(), { description: "Researches" });
    expect("metadata" in without).toBe(false);
    expect(delegateTool({ researcher: child() }, { metadata }).metadata).toEqual(metadata);
    expect("metadata" in delegateTool({ researcher: child() })).toBe(false);
  });

  it("is never in a request to the parent's model or the child's", async () => {
    const researcher = scriptedChild("researcher", () => ({ text: "found it" }));
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a1", name: "researcher", input: { prompt: "look" } },
          { id: "d1", name: "delegate", input: { agent: "researcher", prompt: "look again" } },
        ],
      },
      { text: "done" },
    ]);
    const parent = createBareAgent({
      model,
      tools: [
        agentTool(researcher.agent, { description: "Researches", metadata }),
        delegateTool({ researcher: researcher.agent }, { metadata: { other: "DELEGATE-MARKER" } }),
      ],
    });
    const result = await parent.run("go");
    expect(result.subtype).toBe("success");
    expect(model.requests).toHaveLength(2);
    expect(researcher.model.requests).toHaveLength(2);
    for (const text of [requestText(model), requestText(researcher.model)]) {
      expect(text).not.toContain("v7-METADATA-MARKER");
      expect(text).not.toContain("DELEGATE-MARKER");
    }
  });
});

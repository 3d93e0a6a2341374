import {
  ConfigurationError,
  createAgent,
  createBareAgent,
  defineAgent,
  defineTool,
  query,
  SkeinError,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const UNKNOWN_SUFFIX =
  'unknown option "bogusOption". Check for a typo, or upgrade the SDK if this option was added in a newer version.';

/** Runs `assemble` and returns the ConfigurationError it threw (fails the test otherwise). */
function configurationError(assemble: () => unknown): ConfigurationError {
  try {
    assemble();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(SkeinError.isInstance(error)).toBe(true);
    expect((error as Error).name).toBe("ConfigurationError");
    return error as ConfigurationError;
  }
  throw new Error("expected a ConfigurationError, but nothing was thrown");
}

const schema = z.object({ q: z.string() });
const handler = () => "ok";
const model = scriptedModel([{ text: "hi" }]);

describe("unknown option keys throw at assembly with the exact message", () => {
  it("tool(): ToolOptions", () => {
    const error = configurationError(() =>
      // @ts-expect-error bogusOption is not a ToolOptions key
      tool("search", "Search", schema, handler, { bogusOption: true }),
    );
    expect(error.message).toBe(`ToolOptions: ${UNKNOWN_SUFFIX}`);
  });

  it("tool(): a known option beside the unknown one does not hide it", () => {
    const error = configurationError(() =>
      // @ts-expect-error bogusOption is not a ToolOptions key
      tool("search", "Search", schema, handler, { label: "Search", bogusOption: 1 }),
    );
    expect(error.message).toBe(`ToolOptions: ${UNKNOWN_SUFFIX}`);
  });

  it('tool(): own keys named like prototype members ("__proto__", "toString") are unknown too', () => {
    const proto = configurationError(() =>
      tool("search", "Search", schema, handler, JSON.parse('{"__proto__": {"label": "x"}}')),
    );
    expect(proto.message).toBe(
      'ToolOptions: unknown option "__proto__". Check for a typo, or upgrade the SDK if this option was added in a newer version.',
    );
    const shadowing = configurationError(() =>
      // @ts-expect-error toString is not a ToolOptions key
      tool("search", "Search", schema, handler, { toString: () => "x" }),
    );
    expect(shadowing.message).toMatch(/^ToolOptions: unknown option "toString"\./);
  });

  it('defineTool(): prefixed with defineTool("<id>")', () => {
    const error = configurationError(() =>
      // @ts-expect-error bogusOption is not a defineTool key
      defineTool({ id: "fetch-ticket", execute: handler, bogusOption: true }),
    );
    expect(error.message).toBe(`defineTool("fetch-ticket"): ${UNKNOWN_SUFFIX}`);
  });

  it.each([
    ["createAgent", (options: object) => createAgent(options as never)],
    ["createBareAgent", (options: object) => createBareAgent(options as never)],
    ["defineAgent", (options: object) => defineAgent(options as never)],
    ["query", (options: object) => query({ prompt: "hi", ...options } as never)],
  ])("%s(): AgentOptions", (_name, assemble) => {
    const error = configurationError(() => assemble({ model, bogusOption: true }));
    expect(error.message).toBe(`AgentOptions: ${UNKNOWN_SUFFIX}`);
  });

  it("createAgent(): type-level, an unknown key is a compile error too", () => {
    // @ts-expect-error bogusOption is not an AgentOptions key
    expect(() => createAgent({ model, bogusOption: true })).toThrow(ConfigurationError);
  });

  it("nested option objects are strict too (toolConcurrency, toolExecution, hooks)", () => {
    expect(
      configurationError(() =>
        createBareAgent({ model, toolConcurrency: { mode: "safe", bogusOption: 1 } as never }),
      ).message,
    ).toBe(`AgentOptions: toolConcurrency: ${UNKNOWN_SUFFIX}`);
    expect(
      configurationError(() =>
        createBareAgent({ model, toolExecution: { toolConcurrency: 2, bogusOption: 1 } as never }),
      ).message,
    ).toBe(`AgentOptions: toolExecution: ${UNKNOWN_SUFFIX}`);
    expect(
      configurationError(() =>
        createBareAgent({ model, hooks: { bogusOption: () => {} } as never }),
      ).message,
    ).toBe(`AgentOptions: hooks: ${UNKNOWN_SUFFIX}`);
  });
});

describe("bad agent option values throw ConfigurationError naming the option", () => {
  it.each([0, 1.5, "3", -1, Number.NaN, Number.POSITIVE_INFINITY])(
    "toolConcurrency.maxConcurrency = %s",
    (maxConcurrency) => {
      const error = configurationError(() =>
        createBareAgent({ model, toolConcurrency: { maxConcurrency: maxConcurrency as number } }),
      );
      expect(error.message).toMatch(
        /^AgentOptions: toolConcurrency\.maxConcurrency must be a positive integer, received /,
      );
    },
  );

  it("toolExecution.toolConcurrency = 0", () => {
    expect(
      configurationError(() => createBareAgent({ model, toolExecution: { toolConcurrency: 0 } }))
        .message,
    ).toMatch(/toolExecution\.toolConcurrency must be a positive integer, received 0/);
  });

  it("toolConcurrency together with toolExecution", () => {
    const error = configurationError(() =>
      createBareAgent({
        model,
        toolConcurrency: { mode: "all" },
        toolExecution: { toolConcurrency: 3 },
      }),
    );
    expect(error.message).toMatch(/^AgentOptions: give either toolConcurrency or toolExecution/);
  });

  it("toolConcurrency.mode that is not safe / all / sequential", () => {
    expect(
      configurationError(() =>
        createBareAgent({ model, toolConcurrency: { mode: "parallel" as never } }),
      ).message,
    ).toMatch(
      /toolConcurrency\.mode must be one of "safe", "all", "sequential", received "parallel"/,
    );
  });

  it("the same checks run in defineAgent() and query()", () => {
    expect(
      configurationError(() => defineAgent({ model, toolConcurrency: { maxConcurrency: 0 } }))
        .message,
    ).toMatch(/toolConcurrency\.maxConcurrency/);
    expect(
      configurationError(() =>
        query({ prompt: "hi", model, toolConcurrency: { maxConcurrency: 1.5 } }),
      ).message,
    ).toMatch(/toolConcurrency\.maxConcurrency/);
  });
});

describe("bad tool option values throw ConfigurationError naming the option", () => {
  it.each([-1, 0, Number.NaN, Number.POSITIVE_INFINITY, "100"])("timeoutMs = %s", (timeoutMs) => {
    const fromTool = configurationError(() =>
      tool("slow", "Slow", schema, handler, { timeoutMs: timeoutMs as number }),
    );
    expect(fromTool.message).toMatch(/^tool\("slow"\): timeoutMs must be a positive number/);
    const fromDefineTool = configurationError(() =>
      defineTool({ id: "slow", timeoutMs: timeoutMs as number, execute: handler }),
    );
    expect(fromDefineTool.message).toMatch(
      /^defineTool\("slow"\): timeoutMs must be a positive number/,
    );
  });

  it("executionMode that is not parallel / sequential", () => {
    expect(
      configurationError(() =>
        tool("t", "d", schema, handler, { executionMode: "concurrent" as never }),
      ).message,
    ).toBe(
      'tool("t"): executionMode must be one of "parallel", "sequential", received "concurrent".',
    );
  });

  it("timeoutBehavior, maxResultChars, label, metadata and the callbacks are checked", () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ timeoutBehavior: "retry" }, /timeoutBehavior must be one of/],
      [{ maxResultChars: 0 }, /maxResultChars must be a positive integer/],
      [{ label: 3 }, /label must be a string/],
      [{ metadata: ["v1"] }, /metadata must be a plain object/],
      [{ metadata: "v1" }, /metadata must be a plain object/],
      [{ isConcurrencySafe: true }, /isConcurrencySafe must be a function/],
      [{ prepareArguments: {} }, /prepareArguments must be a function/],
      [{ resourceKeys: ["a"] }, /resourceKeys must be a function/],
    ];
    for (const [options, message] of cases) {
      expect(
        configurationError(() => tool("t", "d", schema, handler, options as never)).message,
      ).toMatch(message);
    }
  });

  it("security without network", () => {
    const error = configurationError(() =>
      tool("t", "d", schema, handler, { security: { filesystem: "workspace" } as never }),
    );
    expect(error.message).toMatch(/^tool\("t"\): security: "network" is required/);
  });

  it("security with an unknown key", () => {
    const error = configurationError(() =>
      tool("t", "d", schema, handler, {
        security: { network: "none", sandboxed: true } as never,
      }),
    );
    expect(error.message).toBe(
      'tool("t"): security: unknown option "sandboxed". Check for a typo, or upgrade the SDK if this option was added in a newer version.',
    );
  });

  it("security with values outside the allowed sets", () => {
    expect(
      configurationError(() =>
        tool("t", "d", schema, handler, { security: { network: "internet" as never } }),
      ).message,
    ).toMatch(/security: network must be one of "none", "loopback", "private", "unrestricted"/);
    expect(
      configurationError(() =>
        tool("t", "d", schema, handler, {
          security: { network: "none", sideEffects: "database" as never },
        }),
      ).message,
    ).toMatch(/security: sideEffects must be one of/);
  });

  it("options that are not an object", () => {
    expect(configurationError(() => tool("t", "d", schema, handler, "fast" as never)).message).toBe(
      'ToolOptions: options must be an object, received "fast".',
    );
  });
});

describe("the other arguments of tool() and defineTool() are checked at assembly", () => {
  it.each([
    [
      "a schema that is not a schema",
      () => tool("t", "d", { shape: {} } as never, handler),
      'tool("t"): the schema must be a Zod schema or a Standard Schema validator, received an object.',
    ],
    [
      "a handler that is not a function",
      () => tool("t", "d", schema, "ok" as never),
      'tool("t"): the handler must be a function, received "ok".',
    ],
    [
      "a description that is not a string",
      () => tool("t", 5 as never, schema, handler),
      'tool("t"): description must be a string, received 5.',
    ],
    [
      "defineTool execute that is neither a function nor false",
      () => defineTool({ id: "t", execute: "run" as never }),
      'defineTool("t"): execute must be a function, or false when the app runs the tool; received "run".',
    ],
    [
      "defineTool parameters that are not an object",
      () => defineTool({ id: "t", parameters: "object" as never, execute: handler }),
      'defineTool("t"): parameters must be a JSON Schema object, received "object".',
    ],
    [
      "defineTool(null)",
      () => defineTool(null as never),
      "defineTool(): options must be an object, received null.",
    ],
  ])("%s", (_label, assemble, message) => {
    expect(configurationError(assemble).message).toBe(message);
  });

  it("defineTool() with no options object at all throws ConfigurationError, not a TypeError", () => {
    const error = configurationError(() => defineTool(undefined as never));
    expect(error.message).toMatch(/^defineTool\(\): options must be an object, received undefined/);
  });
});

describe("tool names", () => {
  it.each([
    ["with spaces", "get weather"],
    ["empty", ""],
    ["with a dot", "files.read"],
    ["too long (65 characters)", "a".repeat(65)],
    ["not ASCII", "天气"],
  ])("a name %s throws, naming the tool name", (_label, name) => {
    const fromTool = configurationError(() => tool(name, "d", schema, handler));
    expect(fromTool.message).toMatch(/the tool name must be 1-64 letters, digits, "_" or "-"/);
    expect(fromTool.message).toContain(
      JSON.stringify(name.length > 60 ? `${name.slice(0, 60)}…` : name),
    );
    const fromDefineTool = configurationError(() => defineTool({ id: name, execute: handler }));
    expect(fromDefineTool.message).toMatch(/the tool name must be 1-64 letters/);
  });

  it("a 64-character name with _ and - is fine", () => {
    const name = `a_b-${"c".repeat(60)}`;
    expect(tool(name, "d", schema, handler).name).toBe(name);
  });

  it("duplicate names throw at assembly, across tool() and defineTool()", () => {
    const first = tool("lookup", "First", schema, handler);
    const second = defineTool({ id: "lookup", execute: handler });
    const error = configurationError(() => createBareAgent({ model, tools: [first, second] }));
    expect(error.message).toMatch(/^AgentOptions: two tools are named "lookup"/);
    expect(() => defineAgent({ model, tools: [first, first] })).toThrow(
      /two tools are named "lookup"/,
    );
    expect(() => createAgent({ model, tools: [second, second] })).toThrow(ConfigurationError);
  });

  it("something that is not a tool in tools throws, naming its index", () => {
    const fake = { name: "fake", description: "d", inputSchema: {} };
    const error = configurationError(() =>
      createBareAgent({ model, tools: [tool("ok", "d", schema, handler), fake as never] }),
    );
    expect(error.message).toMatch(/^AgentOptions: tools\[1\] is an object, not a tool/);
  });
});

import {
  ConfigurationError,
  createAgent,
  createBareAgent,
  defineTool,
  type SandboxPolicy,
  type ToolSecurity,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { useTempDirs } from "../support/temp.ts";

const tempDir = useTempDirs("skein-perm-");

function customTool(name: string, security?: ToolSecurity) {
  return tool(name, "A custom tool", z.object({}), async () => "ok", {
    ...(security ? { security } : {}),
  });
}

function hardened(tools: ReturnType<typeof customTool>[]) {
  return () => createBareAgent({ model: scriptedModel([]), tools, preset: "hardened" });
}

describe("the hardened preset at assembly (C18)", () => {
  it("refuses a custom tool without security metadata, naming the tool and the rule", () => {
    const build = hardened([customTool("fetch_page")]);
    expect(build).toThrow(ConfigurationError);
    expect(build).toThrow('"fetch_page"');
    expect(build).toThrow(/security/);
    expect(build).toThrow(/"none" or "loopback"/);
  });

  it("refuses a defineTool tool without security metadata too", () => {
    const defined = defineTool({ id: "lookup", execute: async () => "ok" });
    expect(() =>
      createBareAgent({ model: scriptedModel([]), tools: [defined], preset: "hardened" }),
    ).toThrow(/"lookup"/);
  });

  it('refuses network "private" and "unrestricted", naming the tool and the value', () => {
    for (const network of ["private", "unrestricted"] as const) {
      const build = hardened([customTool("net_tool", { network })]);
      expect(build).toThrow(ConfigurationError);
      expect(build).toThrow('"net_tool"');
      expect(build).toThrow(network);
    }
  });

  it('accepts network "none" and "loopback"', () => {
    expect(
      hardened([
        customTool("offline", { network: "none" }),
        customTool("local_db", {
          network: "loopback",
          filesystem: "workspace",
          sideEffects: "workspace",
        }),
      ]),
    ).not.toThrow();
  });

  it("refuses the first bad tool among good ones", () => {
    const build = hardened([
      customTool("fine", { network: "none" }),
      customTool("leaky", { network: "unrestricted" }),
    ]);
    expect(build).toThrow('"leaky"');
  });

  it("never refuses the built-in tools", async () => {
    const cwd = await tempDir();
    expect(() => createAgent({ model: scriptedModel([]), cwd, preset: "hardened" })).not.toThrow();
    expect(() =>
      createAgent({
        model: scriptedModel([]),
        cwd,
        preset: "hardened",
        tools: [customTool("offline", { network: "none" })],
      }),
    ).not.toThrow();
  });

  it("without the preset, custom tools need no security metadata", () => {
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        tools: [customTool("plain"), customTool("wide", { network: "unrestricted" })],
      }),
    ).not.toThrow();
  });

  it("an unknown preset is refused", () => {
    expect(() =>
      createBareAgent({ model: scriptedModel([]), preset: "paranoid" as "hardened" }),
    ).toThrow(ConfigurationError);
  });
});

describe("security metadata is checked strictly", () => {
  const bad: [string, unknown, RegExp][] = [
    ["an unknown key", { network: "none", netwrok: "none" }, /unknown option "netwrok"/],
    ["no network", { filesystem: "workspace" }, /network/],
    ["an unknown network", { network: "internet" }, /network/],
    ["an unknown filesystem", { network: "none", filesystem: "everything" }, /filesystem/],
    ["an unknown sideEffects", { network: "none", sideEffects: "lots" }, /sideEffects/],
    ["not an object", "none", /security/],
  ];
  for (const [what, security, message] of bad) {
    it(what, () => {
      const build = () =>
        tool("t", "T", z.object({}), async () => "ok", { security: security as ToolSecurity });
      expect(build).toThrow(ConfigurationError);
      expect(build).toThrow(message);
    });
  }

  it("defineTool checks it the same way", () => {
    expect(() =>
      defineTool({
        id: "t",
        execute: async () => "ok",
        security: { network: "none", bogus: 1 } as unknown as ToolSecurity,
      }),
    ).toThrow(ConfigurationError);
  });
});

describe("ToolContext.sandbox", () => {
  async function sandboxSeen(preset: "hardened" | undefined): Promise<SandboxPolicy | undefined> {
    let called = false;
    let seen: SandboxPolicy | undefined;
    const probe = tool(
      "probe",
      "Reports its sandbox",
      z.object({}),
      async (_input, ctx) => {
        called = true;
        seen = ctx.sandbox;
        return "ok";
      },
      { security: { network: "none" } },
    );
    const model = scriptedModel([
      { toolCalls: [{ id: "p1", name: "probe", input: {} }] },
      { text: "done" },
    ]);
    const result = await createAgent({
      model,
      cwd: await tempDir(),
      tools: [probe],
      ...(preset ? { preset } : {}),
    }).run("go");
    expect(result.subtype).toBe("success");
    expect(called).toBe(true);
    return seen;
  }

  it("is { kind, available, network, filesystem, writable } under the preset", async () => {
    const sandbox = await sandboxSeen("hardened");
    expect(sandbox).toBeDefined();
    expect(Object.keys(sandbox!).sort()).toEqual(
      ["available", "filesystem", "kind", "network", "writable"].sort(),
    );
    expect(typeof sandbox!.kind).toBe("string");
    expect(typeof sandbox!.available).toBe("boolean");
    expect(sandbox!.network).toBe("none");
    expect(typeof sandbox!.filesystem).toBe("string");
    expect(Array.isArray(sandbox!.writable)).toBe(true);
  });

  it("is undefined without the preset", async () => {
    expect(await sandboxSeen(undefined)).toBeUndefined();
  });
});

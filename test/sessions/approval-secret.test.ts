// The approval secret that makes a paused run resumable in the next process: an agent reads
// SKEIN_APPROVAL_SECRET when it is given no approvalSecret; an agent with a durable session store
// and neither is refused at assembly (unless it says "per-process"); the variable's secret seals
// as the option's does. The cross-process proofs are in resume-anywhere.test.ts.
import { rmSync } from "node:fs";
import { join } from "node:path";
import {
  ConfigurationError,
  createAgent,
  createBareAgent,
  memoryStore,
  ResumeError,
  type SessionStore,
  tool,
} from "skein";
import { sqliteStore } from "skein/sqlite";
import { scriptedModel } from "skein/testing";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { rejectionOf } from "../support/promises.ts";
import { makeTempDir } from "../support/temp.ts";

const ENV = "SKEIN_APPROVAL_SECRET";
const dir = makeTempDir("skein-secret-");
const stores: SessionStore[] = [];
afterEach(() => {
  vi.unstubAllEnvs();
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  rmSync(dir, { recursive: true, force: true });
});

function fileStore(name: string): SessionStore {
  const store = sqliteStore({ path: join(dir, `${name}.db`) });
  stores.push(store);
  return store;
}

function assemblyError(build: () => unknown): Error {
  try {
    build();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the assembly to fail");
}

describe("an agent with a durable session store needs a shared secret", () => {
  it("neither approvalSecret nor SKEIN_APPROVAL_SECRET: a ConfigurationError naming both and the way out", () => {
    vi.stubEnv(ENV, undefined);
    const store = fileStore("none");
    for (const build of [
      () => createAgent({ model: scriptedModel([]), sessionStore: store }),
      () => createBareAgent({ model: scriptedModel([]), sessionStore: store }),
    ]) {
      const error = assemblyError(build);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error.message).toContain("approvalSecret");
      expect(error.message).toContain(ENV);
      expect(error.message).toContain('"per-process"');
    }
  });

  it("an empty variable counts as unset", () => {
    vi.stubEnv(ENV, "");
    const error = assemblyError(() =>
      createBareAgent({ model: scriptedModel([]), sessionStore: fileStore("empty") }),
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.message).toContain(ENV);
  });

  it('"per-process" accepts a key that dies with the process; memoryStore needs nothing', () => {
    vi.stubEnv(ENV, undefined);
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        sessionStore: fileStore("per-process"),
        approvalSecret: "per-process",
      }),
    ).not.toThrow();
    expect(() =>
      createBareAgent({ model: scriptedModel([]), sessionStore: memoryStore() }),
    ).not.toThrow();
    // No store: states kept by the app resume in this process, as before.
    expect(() => createBareAgent({ model: scriptedModel([]) })).not.toThrow();
  });

  it("a short secret, from the option or the variable, is refused without echoing it", () => {
    vi.stubEnv(ENV, "tooShortSecret");
    const fromEnv = assemblyError(() => createBareAgent({ model: scriptedModel([]) }));
    expect(fromEnv).toBeInstanceOf(ConfigurationError);
    expect(fromEnv.message).toContain(ENV);
    expect(fromEnv.message).toContain("14 characters");
    expect(fromEnv.message).not.toContain("tooShortSecret");
    vi.stubEnv(ENV, undefined);
    const fromOption = assemblyError(() =>
      createBareAgent({ model: scriptedModel([]), approvalSecret: "shortOne" }),
    );
    expect(fromOption).toBeInstanceOf(ConfigurationError);
    expect(fromOption.message).toContain("approvalSecret");
    expect(fromOption.message).not.toContain("shortOne");
    for (const value of [42, null, {}] as unknown[]) {
      const error = assemblyError(() =>
        createBareAgent({ model: scriptedModel([]), approvalSecret: value as string }),
      );
      expect(error).toBeInstanceOf(ConfigurationError);
    }
  });
});

describe("the variable's secret seals as the option's does", () => {
  const charge = tool(
    "charge",
    "Charges an order.",
    z.object({ order: z.string() }),
    async () => "charged",
  );
  const agentOn = (
    store: SessionStore,
    model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { order: "o-1" } }] },
      { text: "Done." },
    ]),
  ) =>
    createBareAgent({
      model,
      tools: [charge],
      permissions: { ask: ["charge"] },
      sessionStore: store,
    });

  it("paused under one variable, resumed by a new agent under the same: it runs; under another: ResumeError naming the variable, nothing written", async () => {
    const store = fileStore("sealed");
    vi.stubEnv(ENV, "the first deployment's secret, shared");
    const paused = await agentOn(store).run("Charge o-1.");
    expect(paused.subtype).toBe("paused");
    const before = (await store.read(paused.sessionId)).length;

    vi.stubEnv(ENV, "another deployment's secret, not shared");
    const refused = await rejectionOf(
      agentOn(store).resume({ sessionId: paused.sessionId }, { approvals: { c1: true } }),
    );
    expect(refused).toBeInstanceOf(ResumeError);
    expect(refused.message).toContain("does not match its seal");
    expect(refused.message).toContain(ENV);
    expect((await store.read(paused.sessionId)).length).toBe(before);

    vi.stubEnv(ENV, "the first deployment's secret, shared");
    const model = scriptedModel([{ text: "Charged." }]);
    const resumed = await agentOn(store, model).resume(
      { sessionId: paused.sessionId },
      { approvals: { c1: true } },
    );
    expect(resumed.subtype).toBe("success");
    expect(resumed.result).toBe("Charged.");
  });

  it("the option wins over the variable", async () => {
    const store = fileStore("option-wins");
    vi.stubEnv(ENV, "the variable's secret, not used here");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { order: "o-1" } }] },
      { text: "Done." },
    ]);
    const paused = await createBareAgent({
      model,
      tools: [charge],
      permissions: { ask: ["charge"] },
      sessionStore: store,
      approvalSecret: "the option's own secret value",
    }).run("Charge o-1.");
    expect(paused.subtype).toBe("paused");
    // An agent that takes the variable cannot open the option's seals.
    const refused = await rejectionOf(
      agentOn(store).resume({ sessionId: paused.sessionId }, { approvals: { c1: true } }),
    );
    expect(refused).toBeInstanceOf(ResumeError);
  });
});

// Helpers of the kill -9 recovery tests: the mock model in the parent (shared by every child, so
// requests are counted across processes), agent children, and what the side-effect file says.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Message } from "skein";
import { type MockRequest, type MockServer, type MockTurn, mockServer } from "skein/testing";
import { expect } from "vitest";
import { expectValidTranscript } from "../support/results.ts";
import type { AgentTask } from "./children/agent-child.ts";
import { type ChildStore, openChildStore, type StoreChild, startChild } from "./helpers.ts";

export interface MockModel {
  server: MockServer;
  /** Resolves once a request for turn `index` (its count of assistant messages) has arrived. */
  arrived(index: number): Promise<void>;
  /** Model calls that reached the script (valid requests), by turn: `[turn, attempts]`. */
  turnsRequested(): [number, number][];
  /** The request bodies' messages of the valid requests, in arrival order. */
  bodies(): { turn: number; messages: any[] }[];
  /** Requests the server refused (a 400 the real API would send): must stay empty. */
  refused(): MockRequest[];
}

/**
 * A mock Anthropic server playing `turns` by turn index; the first request of each turn in
 * `hangFirst` is accepted and never answered (the model never replies: D1).
 */
export async function startMock(
  turns: MockTurn[],
  options: { hangFirst?: number[] } = {},
): Promise<MockModel> {
  const waiting = new Map<number, () => void>();
  const seen = new Set<number>();
  const server = await mockServer({
    script: ({ index, attempt }) => {
      seen.add(index);
      waiting.get(index)?.();
      if (attempt === 1 && options.hangFirst?.includes(index)) return { hang: true };
      const turn = turns[index];
      if (!turn) throw new Error(`the test scripted no turn ${index}`);
      return turn;
    },
  });
  const calls = () => server.requests.filter((request) => request.path.startsWith("/v1/messages"));
  return {
    server,
    arrived: (index) =>
      seen.has(index)
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiting.set(index, resolve)),
    turnsRequested: () => {
      const counts = new Map<number, number>();
      for (const request of calls())
        if (request.turn !== undefined)
          counts.set(request.turn, (counts.get(request.turn) ?? 0) + 1);
      return [...counts].sort((a, b) => a[0] - b[0]);
    },
    bodies: () =>
      calls()
        .filter((request) => request.turn !== undefined)
        .map((request) => ({ turn: request.turn!, messages: request.body.messages })),
    refused: () => calls().filter((request) => request.turn === undefined),
  };
}

/** What an agent child printed as its outcome. */
export interface ChildOutcome {
  result?: {
    subtype: string;
    result: string;
    numTurns: number;
    usage: { inputTokens: number; outputTokens: number };
    error?: { name: string; message: string };
    pending?: { id: string; name: string; reason: string }[];
    messages: Message[];
    checkpointId?: string;
  };
  rejected?: { name: string; code?: string; message: string };
}

export function agentChild(task: AgentTask): StoreChild {
  return startChild("agent-child.ts", task);
}

/** Waits until the child printed `line`, then SIGKILLs it and waits for its death. */
export async function killAt(child: StoreChild, line: string | ((lines: string[]) => boolean)) {
  const predicate = typeof line === "string" ? (lines: string[]) => lines.includes(line) : line;
  await child.until(predicate, typeof line === "string" ? `"${line}"` : "the kill point");
  child.child.kill("SIGKILL");
  const exit = await child.exited;
  expect(exit.signal).toBe("SIGKILL");
}

/** Waits for the child's outcome line (and, unless it stays alive, its clean exit). */
export async function outcomeOf(child: StoreChild, stayAlive = false): Promise<ChildOutcome> {
  const isOutcome = (line: string) => line.startsWith("result ") || line.startsWith("rejected ");
  await child.until((lines) => lines.some(isOutcome), "its outcome");
  const line = child.lines.find(isOutcome)!;
  if (!stayAlive) expect((await child.exited).code, child.stderr).toBe(0);
  const json = JSON.parse(line.slice(line.indexOf(" ") + 1));
  return line.startsWith("result ") ? { result: json } : { rejected: json };
}

/** How many times each call's handler ran, across every process (the side-effect file). */
export function effects(file: string): Record<string, number> {
  const counts: Record<string, number> = {};
  if (!existsSync(file)) return counts;
  for (const line of readFileSync(file, "utf8").split("\n").filter(Boolean)) {
    const id = line.split(" ")[0]!;
    counts[id] = (counts[id] ?? 0) + 1;
  }
  return counts;
}

/**
 * Every request the model got and the final transcript pair each tool_use with exactly one
 * tool_result, in call order (the mock refuses anything else with a 400, counted as refused).
 */
export function expectWellFormed(model: MockModel, messages: Message[]): void {
  expect(model.refused()).toEqual([]);
  expectValidTranscript(messages);
  for (const { messages: wire } of model.bodies()) expectValidTranscript(wire as Message[]);
}

export const SECRET = "the same secret in every process";

/**
 * A fresh session for one test (its own SQLite file or Postgres schema, its own side-effect
 * file), with the agent children that run and resume it, and a look at its log from the parent.
 */
export function childSession(options: {
  name: string;
  backing: (name: string) => ChildStore;
  dir: string;
  model: MockModel;
  prompt: string;
}) {
  const { name } = options;
  const base = {
    store: options.backing(name),
    sessionId: `session-${name}`,
    modelUrl: options.model.server.url,
    effects: join(options.dir, `${name}.effects`),
    secret: SECRET,
  };
  const withStore = async <T>(body: (store: ReturnType<typeof openChildStore>) => Promise<T>) => {
    const store = openChildStore(base.store);
    try {
      return await body(store);
    } finally {
      await store.close();
    }
  };
  const rows = () => withStore((store) => store.read(base.sessionId));
  return {
    ...base,
    withStore,
    run: (extra: Partial<AgentTask> = {}) =>
      agentChild({ ...base, action: { kind: "run", prompt: options.prompt }, ...extra }),
    resume: (extra: Partial<AgentTask> = {}) =>
      agentChild({ ...base, action: { kind: "resume" }, ...extra }),
    /** The session's entry types, read back in this process. */
    log: async () => (await rows()).map((row) => JSON.parse(row.data).type as string),
    lastSeq: async () => (await rows()).length,
  };
}

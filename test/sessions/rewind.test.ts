// agent.rewindFiles (D8): the files Write and Edit changed since a checkpoint go back, all or
// nothing, never through a symlink or a hard link; the conversation is not changed.
import {
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import {
  ConfigurationError,
  createAgent,
  memoryStore,
  RewindError,
  type SDKResultMessage,
  type SessionError,
} from "skein";
import { scriptedModel } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { makeTempDir } from "../support/temp.ts";
import { lastSeqOf } from "./agent-helpers.ts";

const workspaces: string[] = [];
afterEach(() => {
  for (const path of workspaces.splice(0)) rmSync(path, { recursive: true, force: true });
});

const write = (id: string, file_path: string, content: string) => ({
  id,
  name: "Write",
  input: { file_path, content },
});

/** Run 1 creates a.txt; run 2 edits it and creates b.txt and sub/c.txt. */
async function twoRuns() {
  const cwd = makeTempDir("skein-rewind-");
  workspaces.push(cwd);
  const outside = makeTempDir("skein-rewind-outside-");
  workspaces.push(outside);
  const store = memoryStore();
  const model = scriptedModel([
    { toolCalls: [write("w1", "a.txt", "v1\n")] },
    { text: "Created a.txt." },
    {
      toolCalls: [
        {
          id: "e1",
          name: "Edit",
          input: { file_path: "a.txt", old_string: "v1", new_string: "v2" },
        },
        write("w2", "b.txt", "b\n"),
        write("w3", "sub/c.txt", "c\n"),
      ],
    },
    { text: "Changed them." },
  ]);
  const agent = createAgent({
    cwd,
    model,
    sessionStore: store,
    permissions: { allow: ["Write", "Edit"] },
  });
  const first = await agent.run("Create a.txt", { sessionId: "files" });
  const second = await agent.run("Change things", { sessionId: "files" });
  for (const result of [first, second]) {
    expect(result.subtype).toBe("success");
    expect(result.steps[0]!.toolCalls.every((call) => !call.isError)).toBe(true);
  }
  const read = (relative: string) =>
    existsSync(join(cwd, relative)) ? readFileSync(join(cwd, relative), "utf8") : null;
  const files = () => ({ a: read("a.txt"), b: read("b.txt"), c: read("sub/c.txt") });
  expect(files()).toEqual({ a: "v2\n", b: "b\n", c: "c\n" });
  return { cwd, outside, store, agent, first, second, files };
}

const checkpoint = (result: SDKResultMessage) => result.checkpointId!;

describe("rewindFiles", () => {
  it("to run 2's checkpoint: restores what it edited, deletes what it created; twice is a no-op", async () => {
    const { store, agent, second, files } = await twoRuns();
    const seq = await lastSeqOf(store, "files");
    expect(await agent.rewindFiles("files", checkpoint(second))).toEqual({
      restored: ["a.txt"],
      deleted: ["b.txt", "sub/c.txt"],
    });
    expect(files()).toEqual({ a: "v1\n", b: null, c: null });
    expect(await agent.rewindFiles("files", checkpoint(second))).toEqual({
      restored: [],
      deleted: [],
    });
    expect(files()).toEqual({ a: "v1\n", b: null, c: null });
    // The conversation is not changed.
    expect(await lastSeqOf(store, "files")).toBe(seq);
  });

  it("to run 1's checkpoint: every file those runs created is gone", async () => {
    const { agent, first, files } = await twoRuns();
    expect(await agent.rewindFiles("files", checkpoint(first))).toEqual({
      restored: [],
      deleted: ["a.txt", "b.txt", "sub/c.txt"],
    });
    expect(files()).toEqual({ a: null, b: null, c: null });
  });

  it("refuses a path behind a directory replaced by a symlink: RewindError, no file changed", async () => {
    const { cwd, outside, agent, second, files } = await twoRuns();
    mkdirSync(join(outside, "sub"));
    writeFileSync(join(outside, "sub", "c.txt"), "outside\n");
    renameSync(join(cwd, "sub"), join(cwd, "sub-moved"));
    symlinkSync(join(outside, "sub"), join(cwd, "sub"));
    const before = files();
    const error = await rejectionOf(agent.rewindFiles("files", checkpoint(second)));
    expect(error).toBeInstanceOf(RewindError);
    expect((error as RewindError).paths).toEqual(["sub/c.txt"]);
    expect(error.message).toContain("No file was changed");
    expect(files()).toEqual(before);
    expect(readFileSync(join(outside, "sub", "c.txt"), "utf8")).toBe("outside\n");
  });

  it("refuses a file that became a symlink, and a hard-linked file, all or nothing", async () => {
    const { cwd, outside, agent, second, files } = await twoRuns();
    writeFileSync(join(outside, "target.txt"), "target\n");
    rmSync(join(cwd, "b.txt"));
    symlinkSync(join(outside, "target.txt"), join(cwd, "b.txt"));
    linkSync(join(cwd, "a.txt"), join(cwd, "a-link.txt"));
    const error = await rejectionOf(agent.rewindFiles("files", checkpoint(second)));
    expect(error).toBeInstanceOf(RewindError);
    expect((error as RewindError).paths).toEqual(["a.txt", "b.txt"]);
    expect(files()).toEqual({ a: "v2\n", b: "target\n", c: "c\n" });
    expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe("target\n");
    expect(readFileSync(join(cwd, "a-link.txt"), "utf8")).toBe("v2\n");
  });

  it("an unknown checkpoint is a RewindError, an unknown session not_found, no store a ConfigurationError", async () => {
    const { agent, files } = await twoRuns();
    const unknown = await rejectionOf(agent.rewindFiles("files", "cp_nope"));
    expect(unknown).toBeInstanceOf(RewindError);
    expect(unknown.message).toContain("cp_nope");
    const missing = await rejectionOf(agent.rewindFiles("nobody", "cp_nope"));
    expect((missing as SessionError).code).toBe("not_found");
    const empty = makeTempDir("skein-sessions-");
    workspaces.push(empty);
    const storeless = createAgent({ cwd: empty, model: scriptedModel([]) });
    expect(await rejectionOf(storeless.rewindFiles("files", "cp_nope"))).toBeInstanceOf(
      ConfigurationError,
    );
    expect(files()).toEqual({ a: "v2\n", b: "b\n", c: "c\n" });
  });
});

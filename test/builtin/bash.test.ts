import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBackgroundTasks } from "../../src/builtin/background.ts";
import {
  bashOutputTool,
  bashTool,
  killShellTool,
  MAX_TIMEOUT_MS,
  OUTPUT_HEAD_CHARS,
  OUTPUT_TAIL_CHARS,
  OutputBuffer,
} from "../../src/builtin/bash.ts";
import { builtinInfo } from "../../src/tools/builtin-mark.ts";
import { useEnv } from "../support/env.ts";
import { expectGone } from "../support/processes.ts";
import { waitFor } from "../support/promises.ts";
import { invoke, type ShellFixture, shellFixture } from "./shell-harness.ts";

const CAP = OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS + 200;
/** A lone surrogate: half of a split pair. */
const BROKEN_PAIR = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The pid a command wrote to a file, once it is there. */
const pidIn = (file: string): number | undefined => {
  const pid = existsSync(file) ? Number(readFileSync(file, "utf8").trim()) : 0;
  return pid > 0 ? pid : undefined;
};

let fx: ShellFixture;
beforeEach(() => {
  fx = shellFixture();
});
afterEach(() => fx.cleanup());

const bash = (input: Record<string, unknown>, signal?: AbortSignal) =>
  invoke(bashTool(fx.env), input, signal ? { signal } : {});

describe("Bash: basics", () => {
  it("returns stdout and stderr, and exit 0 is a success", async () => {
    const result = await bash({ command: "echo hello; echo oops >&2" });
    expect(result.isError).toBeFalsy();
    expect(result.text).toBe("hello\noops");
    expect(result.details).toMatchObject({ exitCode: 0, timedOut: false });
  });

  it("keeps stdout and stderr in the order they were written", async () => {
    const result = await bash({ command: "echo 1; echo 2 >&2; echo 3; echo 4 >&2" });
    expect(result.text).toBe("1\n2\n3\n4");
  });

  it("reports a non-zero exit as an error with the code and the output's tail", async () => {
    const result = await bash({ command: "echo before; echo failing >&2; exit 3" });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("Exit code 3");
    expect(result.text).toContain("before\nfailing");
    expect(result.details).toMatchObject({ exitCode: 3 });
  });

  it("keeps the tail of a long failing output", async () => {
    const result = await bash({ command: "seq 1 200000; echo LAST-LINE; exit 1" });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("Exit code 1");
    expect(result.text.endsWith("LAST-LINE")).toBe(true);
    expect(result.text).toContain("characters of output omitted");
  });

  it("says which signal killed the command", async () => {
    const result = await bash({ command: "kill -9 $$" });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("SIGKILL");
  });

  // With stdin left open, `cat` would wait until the call's timeout: the test's timeout first.
  it("gives stdin end-of-file at once (B13)", async () => {
    const result = await bash({ command: 'cat; read -r line; echo "got:[$line]"' });
    expect(result.text).toBe("got:[]");
  });

  it("refuses an empty command", async () => {
    const result = await bash({ command: "   " });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("empty");
  });

  it("declares truthful metadata", () => {
    const tool = bashTool(fx.env);
    expect(tool.name).toBe("Bash");
    expect(tool.security).toEqual({
      network: "unrestricted",
      filesystem: "unrestricted",
      sideEffects: "external",
    });
    const permission = builtinInfo(tool)?.permission;
    expect(permission?.kind).toBe("bash");
    if (permission?.kind === "bash")
      expect(permission.command({ command: "ls -la" })).toBe("ls -la");
    expect(bashOutputTool(fx.env).security).toEqual({
      network: "none",
      filesystem: "none",
      sideEffects: "none",
    });
    expect(killShellTool(fx.env).security).toEqual({
      network: "none",
      filesystem: "none",
      sideEffects: "external",
    });
    expect(builtinInfo(bashOutputTool(fx.env))?.permission.kind).toBe("none");
    expect(builtinInfo(killShellTool(fx.env))?.permission.kind).toBe("none");
  });
});

// Left alone the commands below run for 100 s: a call that did not end them fails by the
// test's timeout.
describe("Bash: timeouts and aborts kill the whole tree", () => {
  it("kills the process group on timeout and says so, with the output so far", async () => {
    const result = await bash({
      command: "sleep 100 & echo child=$!; echo shell=$$; sleep 100",
      timeout: 500,
    });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("timed out after 500 ms");
    const child = Number(/child=(\d+)/.exec(result.text)?.[1]);
    const shell = Number(/shell=(\d+)/.exec(result.text)?.[1]);
    expect(child).toBeGreaterThan(0);
    await expectGone([child, shell]);
  });

  it("kills children that ignore SIGTERM (SIGKILL after the grace)", async () => {
    const result = await bash({
      command: "trap '' TERM; sleep 100 & echo child=$!; sleep 100",
      timeout: 500,
    });
    expect(result.text).toContain("timed out");
    await expectGone([Number(/child=(\d+)/.exec(result.text)?.[1])]);
  });

  it("kills the process group when the call is aborted", async () => {
    const controller = new AbortController();
    const pending = bash(
      { command: "sleep 100 & echo $! > child.pid; sleep 100" },
      controller.signal,
    );
    const child = await waitFor(() => pidIn(join(fx.root, "child.pid")));
    controller.abort(new Error("user abort"));
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(result.text).toContain("aborted");
    await expectGone([child]);
  });

  it("caps the timeout at 600000 ms", async () => {
    const result = await bash({ command: "echo ok", timeout: 60_000_000 });
    expect(result.text).toBe("ok");
    expect(MAX_TIMEOUT_MS).toBe(600_000);
  });
});

describe("Bash: output is bounded (B4)", () => {
  it("keeps 50 MB of output to the cap, head and tail", async () => {
    const result = await bash({ command: "yes | head -c 50000000; echo; echo THE-END" });
    expect(result.isError).toBeFalsy();
    expect(result.text.length).toBeLessThan(CAP);
    expect(result.text.startsWith("y\ny\n")).toBe(true);
    expect(result.text.endsWith("y\n\nTHE-END")).toBe(true);
    expect(result.text).toMatch(/\[\.\.\. 4\d{7} characters of output omitted \.\.\.\]/);
    expect(result.details).toMatchObject({ outputChars: 50_000_009, truncated: true });
  });

  it("keeps memory bounded under endless output, and the timeout still fires", async () => {
    const baseline = process.memoryUsage();
    let peak = 0;
    const sampler = setInterval(() => {
      const now = process.memoryUsage();
      peak = Math.max(
        peak,
        now.heapUsed + now.arrayBuffers - baseline.heapUsed - baseline.arrayBuffers,
      );
    }, 20);
    try {
      const result = await bash({ command: "yes this-line-repeats", timeout: 2_500 });
      expect(result.isError).toBe(true);
      expect(result.text).toContain("timed out");
      expect(result.text.length).toBeLessThan(CAP);
      expect(result.text.trimEnd().endsWith("this-line-repeats")).toBe(true);
      const seen = (result.details as { outputChars: number }).outputChars;
      // More went through than was kept (how much depends on the machine's speed: the 50 MB
      // case above counts exactly), and memory did not follow it.
      expect(seen).toBeGreaterThan(10 * CAP);
      expect(peak).toBeLessThan(150 * 1024 * 1024);
    } finally {
      clearInterval(sampler);
    }
  });

  it("never splits a multi-byte UTF-8 sequence across pipe chunks", async () => {
    // 3-byte characters written in blocks that are not a multiple of 3: raw chunks split them.
    const result = await bash({ command: "yes '€€€€€€€€€' | head -c 5600000" });
    expect(result.text).not.toContain("\uFFFD");
    expect(result.text.replace(/\[\.\.\. \d+ characters of output omitted \.\.\.\]/, "")).toMatch(
      /^[€\n]+$/,
    );
  });

  it("never splits a surrogate pair at the head or tail cut", async () => {
    // "a" first makes the head cut fall between the halves of a 4-byte character.
    const result = await bash({ command: "printf a; yes '😀😀😀😀😀😀😀😀😀' | head -n 20000" });
    expect(result.text).not.toContain("\uFFFD");
    expect(BROKEN_PAIR.test(result.text)).toBe(false);
    expect(result.text.endsWith("😀😀😀")).toBe(true);
  });
});

describe("OutputBuffer", () => {
  it("keeps head and tail, and counts what went by", () => {
    const buffer = new OutputBuffer(4, 6);
    for (const piece of ["abc", "defg", "hijklmnop", "qrstuvwxyz"]) buffer.push(piece);
    expect(buffer.total).toBe(26);
    expect(buffer.text()).toBe("abcd\n\n[... 16 characters of output omitted ...]\n\nuvwxyz");
  });

  it("holds at most twice its window whatever is pushed", () => {
    const buffer = new OutputBuffer(10, 100);
    for (let i = 0; i < 10_000; i++) buffer.push("x".repeat(97));
    const held = (buffer as unknown as { tail: string[] }).tail.join("").length;
    expect(held).toBeLessThanOrEqual(200);
  });

  it("does not cut a surrogate pair at either end", () => {
    const buffer = new OutputBuffer(3, 5);
    buffer.push(`a${"😀".repeat(20)}`);
    const text = buffer.text();
    expect(BROKEN_PAIR.test(text)).toBe(false);
  });

  it("returns what is new since an offset", () => {
    const buffer = new OutputBuffer(2, 4);
    buffer.push("ab");
    expect(buffer.since(0)).toBe("ab");
    buffer.push("cd");
    expect(buffer.since(2)).toBe("cd");
    buffer.push("efghij");
    expect(buffer.since(4)).toBe("\n\n[... 2 characters of output omitted ...]\n\nghij");
  });
});

describe("Bash: working directory", () => {
  it("keeps the directory across calls", async () => {
    await bash({ command: "cd sub" });
    const result = await bash({ command: "pwd" });
    expect(result.text).toBe(join(fx.root, "sub"));
  });

  it("resets a directory outside the workspace to the root, and says so", async () => {
    const result = await bash({ command: "cd /; echo moved" });
    expect(result.text).toContain("moved");
    expect(result.text).toContain("reset to the workspace root");
    expect((await bash({ command: "pwd" })).text).toBe(fx.root);
  });

  it("leaves the directory unchanged when the command calls exit", async () => {
    await bash({ command: "cd sub" });
    const result = await bash({ command: "cd /; exit 0" });
    expect(result.isError).toBeFalsy();
    expect((await bash({ command: "pwd" })).text).toBe(join(fx.root, "sub"));
  });

  it("cannot be moved out by forging the fd-3 report", async () => {
    const forgeries = [
      "echo / >&3",
      "printf '/\\0' >&3",
      "printf '/etc\\0' > /proc/$$/fd/10; printf '/etc\\0' > /proc/$$/fd/255",
      "for f in /proc/$$/fd/*; do printf '/etc\\0' > $f; done 2>/dev/null; exit 0",
      "exec 3>/dev/null; cd /",
    ];
    for (const command of forgeries) {
      await bash({ command });
      const pwd = await bash({ command: "pwd -P" });
      expect(pwd.text.startsWith(fx.root), `after ${command}: ${pwd.text}`).toBe(true);
    }
  });

  it("falls back to the root when the kept directory was deleted", async () => {
    await bash({ command: "mkdir gone && cd gone" });
    await bash({ command: "cd .. && rmdir gone" });
    await bash({ command: "cd gone 2>/dev/null; true" });
    const result = await bash({ command: "pwd" });
    expect(result.text).toContain(fx.root);
  });
});

describe("Bash: calls are serialised per agent (B13)", () => {
  it("never interleaves two concurrent calls, and the second sees the first's cd", async () => {
    const log = join(fx.root, "log");
    const [first, second] = await Promise.all([
      bash({ command: `echo a1 >> ${log}; sleep 0.4; echo a2 >> ${log}; cd sub` }),
      bash({ command: `echo b1 >> ${log}; pwd` }),
    ]);
    expect(first.isError).toBeFalsy();
    expect(readFileSync(log, "utf8")).toBe("a1\na2\nb1\n");
    expect(second.text).toBe(join(fx.root, "sub"));
  });

  it("an aborted queued call never runs", async () => {
    const controller = new AbortController();
    const first = bash({ command: "sleep 0.5" });
    const queued = bash({ command: "touch queued-ran" }, controller.signal);
    controller.abort();
    expect((await queued).isError).toBe(true);
    await first;
    expect(existsSync(join(fx.root, "queued-ran"))).toBe(false);
  });
});

describe("Bash: credentials never reach the command (C12)", () => {
  const secrets: Record<string, string> = {
    ANTHROPIC_API_KEY: "sk-ant-secret-value-1",
    OPENAI_API_KEY: "sk-openai-secret-value-2",
    DEEPSEEK_API_KEY: "deepseek-secret-value-3",
    GITHUB_TOKEN: "ghp-secret-value-4",
    MY_CLIENT_SECRET: "client-secret-value-5",
    ANTHROPIC_BASE_URL: "https://secret-base-url-6.example",
    DB_PASSWORD: "db-password-value-7",
    AWS_SECRET_ACCESS_KEY: "aws-secret-value-8",
  };
  const setEnv = useEnv();
  beforeEach(() => {
    for (const [name, value] of Object.entries(secrets)) setEnv(name, value);
    setEnv("SKEIN_HARMLESS", "visible-value");
  });

  it.each([
    "env",
    "printenv",
    "cat /proc/self/environ | tr '\\0' '\\n'",
    "echo $ANTHROPIC_API_KEY $OPENAI_API_KEY $DEEPSEEK_API_KEY $GITHUB_TOKEN $MY_CLIENT_SECRET",
    "sh -c 'cat /proc/$$/environ' | tr '\\0' '\\n'",
  ])("%s shows no secret", async (command) => {
    const result = await bash({ command });
    for (const value of Object.values(secrets)) expect(result.text).not.toContain(value);
    if (
      command !==
      "echo $ANTHROPIC_API_KEY $OPENAI_API_KEY $DEEPSEEK_API_KEY $GITHUB_TOKEN $MY_CLIENT_SECRET"
    ) {
      expect(result.text).toContain("SKEIN_HARMLESS=visible-value");
    }
  });
});

describe("Bash: background tasks", () => {
  const output = (id: string, filter?: string) =>
    invoke(bashOutputTool(fx.env), { bash_id: id, ...(filter ? { filter } : {}) });
  const kill = (id: string) => invoke(killShellTool(fx.env), { shell_id: id });

  // The command waits for a file the test writes later: a call that waited for it would hang.
  it("starts, reads new output incrementally, and reports the exit", async () => {
    const result = await bash({
      command: "echo one; while [ ! -e go ]; do sleep 0.02; done; echo two; echo three; exit 4",
      run_in_background: true,
    });
    expect(result.isError).toBeFalsy();
    expect(result.text).toContain("bash_1");
    expect(result.text).toContain("BashOutput");
    expect(result.text).toContain("KillShell");
    const first = await waitFor(async () => {
      const read = await output("bash_1");
      return read.text.includes("one") ? read.text : undefined;
    });
    expect(first).toBe("Status: running\none");
    expect((await output("bash_1")).text).toBe("Status: running\n(no new output)");
    writeFileSync(join(fx.root, "go"), "");
    await waitFor(() => (fx.background.get("bash_1")?.status === "running" ? undefined : true));
    const second = await output("bash_1", "^th");
    expect(second.text).toBe("Status: exited with code 4\nthree");
    expect((await output("bash_1")).text).toBe("Status: exited with code 4\n(no new output)");
    expect(fx.background.get("bash_1")?.status).toBe("failed");
  });

  it("numbers shells bash_1, bash_2", async () => {
    const a = await bash({ command: "true", run_in_background: true });
    const b = await bash({ command: "true", run_in_background: true });
    expect(a.details).toMatchObject({ bashId: "bash_1" });
    expect(b.details).toMatchObject({ bashId: "bash_2" });
  });

  it("KillShell kills the whole process group", async () => {
    await bash({ command: "sleep 100 & echo $! > child.pid; sleep 100", run_in_background: true });
    const child = await waitFor(() => pidIn(join(fx.root, "child.pid")));
    const killed = await kill("bash_1");
    expect(killed.isError).toBeFalsy();
    expect(killed.text).toContain("Killed shell bash_1");
    await expectGone([child]);
    expect((await output("bash_1")).text).toContain("killed");
    expect(fx.background.get("bash_1")?.status).toBe("stopped");
    expect((await kill("bash_1")).text).toContain("not running");
  });

  it("keeps background output bounded, tail first", async () => {
    await bash({ command: "yes | head -c 5000000; echo END", run_in_background: true });
    await waitFor(() => (fx.background.get("bash_1")?.status === "running" ? undefined : true));
    const read = await output("bash_1");
    expect(read.text.length).toBeLessThan(CAP);
    expect(read.text.endsWith("y\nEND")).toBe(true);
  });

  it("unknown ids are error results listing the known ones", async () => {
    await bash({ command: "true", run_in_background: true });
    const unknown = await output("bash_9");
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toContain("bash_1");
    const killUnknown = await kill("nope");
    expect(killUnknown.isError).toBe(true);
    expect(killUnknown.text).toContain("bash_1");
  });

  it("rejects an invalid filter", async () => {
    await bash({ command: "true", run_in_background: true });
    const result = await output("bash_1", "(");
    expect(result.isError).toBe(true);
    expect(result.text).toContain("regular expression");
  });

  it("stops a catastrophic filter with an error, and keeps the output unread", async () => {
    await bash({ command: `echo ${"a".repeat(30)}b; echo ok`, run_in_background: true });
    await waitFor(() => (fx.background.get("bash_1")?.status === "running" ? undefined : true));
    const slow = await output("bash_1", "^(a+)+$");
    expect(slow.isError).toBe(true);
    expect(slow.text).toContain("took too long");
    expect(slow.text).toContain("simpler pattern");
    // The event loop stayed free and the output is still there for a simpler filter.
    expect((await output("bash_1", "^ok$")).text).toBe("Status: exited with code 0\nok");
  });

  it("tests at most the first 10000 characters of a line, and returns the line whole", async () => {
    const command = "printf 'x%.0s' $(seq 1 12000); echo END; echo short END";
    await bash({ command, run_in_background: true });
    await bash({ command, run_in_background: true });
    await waitFor(() =>
      ["bash_1", "bash_2"].some((id) => fx.background.get(id)?.status === "running")
        ? undefined
        : true,
    );
    expect((await output("bash_1", "END$")).text).toBe("Status: exited with code 0\nshort END");
    const whole = await output("bash_2", "^x");
    expect(whole.text).toBe(`Status: exited with code 0\n${"x".repeat(12000)}END`);
  });

  it("stopAll stops every running shell (what the process exit hook does)", async () => {
    await bash({ command: "sleep 100 & echo $! > child.pid; sleep 100", run_in_background: true });
    const child = await waitFor(() => pidIn(join(fx.root, "child.pid")));
    fx.background.stopAll();
    await expectGone([child]);
  });

  it("uses ctx.background when the engine provides one", async () => {
    const registry = createBackgroundTasks();
    const result = await invoke(
      bashTool(fx.env),
      { command: "echo hi", run_in_background: true },
      { context: { background: registry } },
    );
    expect(result.text).toContain("bash_1");
    expect(registry.get("bash_1")).toBeDefined();
    expect(fx.background.get("bash_1")).toBeUndefined();
    registry.stopAll();
  });
});

describe("createBackgroundTasks", () => {
  it("tracks status: done, failed, stopped; ids are the caller's or task_N", async () => {
    const registry = createBackgroundTasks();
    const done = registry.start({ run: async () => "value" });
    const failed = registry.start({ id: "mine", run: async () => Promise.reject(new Error("no")) });
    let aborted = false;
    const stopped = registry.start({
      run: (signal) =>
        new Promise((resolve) =>
          signal.addEventListener("abort", () => {
            aborted = true;
            resolve("late");
          }),
        ),
    });
    expect([done, failed, stopped]).toEqual(["task_1", "mine", "task_2"]);
    expect(() => registry.start({ id: "mine", run: async () => 1 })).toThrow(/already exists/);
    await waitFor(() =>
      ["task_1", "mine"].some((id) => registry.get(id)?.status === "running") ? undefined : true,
    );
    expect(registry.get("task_1")).toEqual({ id: "task_1", status: "done", output: "value" });
    expect(registry.get("mine")).toMatchObject({ status: "failed", output: "no" });
    expect(registry.get("task_2")?.status).toBe("running");
    expect(registry.stop("task_2")).toBe(true);
    expect(aborted).toBe(true);
    await waitFor(() => (registry.get("task_2")?.status === "running" ? undefined : true));
    expect(registry.get("task_2")?.status).toBe("stopped");
    expect(registry.stop("task_2")).toBe(false);
    expect(registry.stop("unknown")).toBe(false);
    expect(registry.get("unknown")).toBeUndefined();
  });

  it("adds one exit listener for all registries", () => {
    const before = process.listenerCount("exit");
    const registries = Array.from({ length: 5 }, () => createBackgroundTasks());
    for (const registry of registries) {
      registry.start({ run: (signal) => new Promise((r) => signal.addEventListener("abort", r)) });
    }
    expect(process.listenerCount("exit") - before).toBeLessThanOrEqual(1);
    for (const registry of registries) registry.stopAll();
  });

  it("kills background shells when the process exits", () => {
    const src = (path: string) => new URL(`../../src/builtin/${path}`, import.meta.url).href;
    const pidFile = join(fx.root, "pids");
    const script = join(fx.root, "exit-probe.mts");
    writeFileSync(
      script,
      `import { existsSync, readFileSync } from "node:fs";
import { bashTool } from ${JSON.stringify(src("bash.ts"))};
import { createBackgroundTasks } from ${JSON.stringify(src("background.ts"))};
import { runtimeOf } from ${JSON.stringify(src("../tools/definition.ts"))};
const background = createBackgroundTasks();
const root = ${JSON.stringify(fx.root)};
const env = { workspace: { root, resolve: async () => ({ absolute: root, relative: "" }) },
  readDenied: () => false, readDenyPatterns: [], background, sandboxed: false };
const context = { callId: "c", call: { id: "c", name: "Bash", input: {}, kind: "tool" },
  sessionId: "s", signal: new AbortController().signal, emit() {}, update() {},
  runData: { get() {}, set() {} } };
await runtimeOf(bashTool(env)).execute({ command: "sleep 100 & echo $! $$ > pids; sleep 100",
  run_in_background: true }, context);
// The file exists before echo has written it: wait for the whole line.
const written = () => existsSync(${JSON.stringify(pidFile)}) && readFileSync(${JSON.stringify(pidFile)}, "utf8").endsWith("\\n");
while (!written()) await new Promise((r) => setTimeout(r, 20));
process.exit(0);
`,
    );
    const cwd = fileURLToPath(new URL("../..", import.meta.url));
    const child = spawnSync(process.execPath, ["--import", "tsx", script], {
      cwd,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(child.status, child.stderr).toBe(0);
    const pids = readFileSync(pidFile, "utf8").trim().split(" ").map(Number);
    expect(pids).toHaveLength(2);
    return expectGone(pids);
  });
});

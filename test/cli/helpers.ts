import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The TypeScript entry, run through tsx: no build needed, same code as dist/cli/main.js. */
const SOURCE_ENTRY = join(ROOT, "src/cli/main.ts");
export const BUILT_ENTRY = join(ROOT, "dist/cli/main.js");

export interface CliProcess {
  child: ChildProcess;
  /** Everything written so far. */
  readonly stdout: string;
  readonly stderr: string;
  /** stdout as the chunks arrived: more than one chunk means the text streamed. */
  readonly stdoutChunks: string[];
  /** Resolves once stdout or stderr (as chosen) contains `text`. */
  waitFor(stream: "stdout" | "stderr", text: string): Promise<void>;
  exited: Promise<CliResult>;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  stdoutChunks: string[];
}

/**
 * The environment of the test process without anything that would reach a real provider or
 * change the output (keys, base URLs, colors), plus `env`. Non-TTY pipes only.
 */
export function cleanEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(ANTHROPIC_|OPENAI_|SKEIN_|GEMINI_|GOOGLE_)/.test(name)) continue;
    if (["NODE_OPTIONS", "FORCE_COLOR", "NO_COLOR"].includes(name)) continue;
    base[name] = value;
  }
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete base[name];
    else base[name] = value;
  }
  return base;
}

let workspace: string | undefined;

/**
 * The command's working directory unless a test gives one: a temp directory, so the session log
 * every run writes (`.skein/sessions.db`) never lands in the repository.
 */
function defaultWorkspace(): string {
  if (!workspace) {
    const dir = mkdtempSync(join(tmpdir(), "skein-cli-"));
    workspace = dir;
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  }
  return workspace;
}

export function startCli(
  args: string[],
  options: {
    env?: Record<string, string | undefined>;
    stdin?: string;
    /**
     * Run src/cli/main.ts through tsx instead of dist/ (three times the start-up time). dist/ is
     * built once per test run when older than the sources (test/support/global-setup.ts).
     */
    source?: boolean;
    /** @deprecated dist/ is the default; kept for the tests that say so. */
    built?: boolean;
    /** The working directory (the agent's workspace); the repository root by default. */
    cwd?: string;
  } = {},
): CliProcess {
  // tsx by its resolved URL, so the command also starts from a directory outside the repository.
  const entry = options.source
    ? ["--import", import.meta.resolve("tsx"), SOURCE_ENTRY]
    : [BUILT_ENTRY];
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: options.cwd ?? defaultWorkspace(),
    env: cleanEnv(options.env),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const stdoutChunks: string[] = [];
  const waiters: { stream: "stdout" | "stderr"; text: string; resolve: () => void }[] = [];
  const check = () => {
    for (const waiter of waiters.slice()) {
      if ((waiter.stream === "stdout" ? stdout : stderr).includes(waiter.text)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    stdoutChunks.push(chunk);
    check();
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
    check();
  });
  if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  else child.stdin!.end();
  const exited = new Promise<CliResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr, stdoutChunks }));
  });
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    stdoutChunks,
    waitFor(stream, text) {
      return new Promise<void>((resolve, reject) => {
        waiters.push({ stream, text, resolve });
        check();
        exited.then(
          (result) =>
            reject(
              new Error(
                `the CLI exited (${result.code ?? result.signal}) before its ${stream} showed ${JSON.stringify(text)}.\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
              ),
            ),
          reject,
        );
      });
    },
    exited,
  };
}

export function runCli(
  args: string[],
  options: Parameters<typeof startCli>[1] = {},
): Promise<CliResult> {
  return startCli(args, options).exited;
}

/** The lines of a text, without the empty one after the last newline. */
export function lines(text: string): string[] {
  return text.split("\n").filter((line, index, all) => line !== "" || index < all.length - 1);
}

/** Builds dist/ unless it is newer than every file under src/ (`npm run build` ran just before). */
export async function ensureBuilt(): Promise<void> {
  if (existsSync(BUILT_ENTRY) && newestIn(join(ROOT, "src")) <= statSync(BUILT_ENTRY).mtimeMs) {
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const build = spawn("npm", ["run", "build"], { cwd: ROOT, stdio: "ignore" });
    build.on("error", reject);
    build.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`npm run build failed (${code})`)),
    );
  });
}

function newestIn(directory: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestIn(path) : statSync(path).mtimeMs);
  }
  return newest;
}

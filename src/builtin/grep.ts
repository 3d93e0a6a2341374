import type { Stats } from "node:fs";
import { stat } from "node:fs/promises";
import type { ResolvedPath } from "../tools/workspace.ts";
import { BuiltinToolError, defineBuiltin } from "./define.ts";
import { type BuiltinEnvironment, hiddenFor } from "./environment.ts";
import { childProcess } from "./node-modules.ts";
import { hiddenNote } from "./workspace.ts";
import { codeOf, echo, fsError } from "./workspace-errors.ts";

export const GREP_TIMEOUT_MS = 20_000;
export const GREP_DEFAULT_HEAD_LIMIT = 250;
/** Characters of output; below the engine's 100,000-character result cap. */
export const GREP_MAX_OUTPUT_CHARS = 50_000;
export const GREP_MAX_LINE_CHARS = 500;
const MAX_STDERR_CHARS = 2000;

type OutputMode = "files_with_matches" | "content" | "count";

export interface GrepInput {
  pattern: string;
  path?: string;
  glob?: string;
  type?: string;
  output_mode?: OutputMode;
  "-i"?: boolean;
  "-n"?: boolean;
  "-A"?: number;
  "-B"?: number;
  "-C"?: number;
  head_limit?: number;
  multiline?: boolean;
}

const contextField = (what: string) => ({
  type: "integer",
  minimum: 0,
  maximum: 1000,
  description: `Lines to show ${what} each match (output_mode "content" only).`,
});

/** `timeoutMs` is for tests and hosts that want a different time cap. */
export function grepTool(env: BuiltinEnvironment, options: { timeoutMs?: number } = {}) {
  const timeoutMs = options.timeoutMs ?? GREP_TIMEOUT_MS;
  return defineBuiltin<GrepInput>({
    name: "Grep",
    description: `Searches file contents of the workspace with ripgrep (Rust regex syntax: no backreferences or lookaround; literal braces need escaping). Honours .gitignore; skips binary files and .git; does not follow symbolic links. Output modes: "files_with_matches" (default, paths), "content" (matching lines), "count" (matches per file). At most head_limit entries (default ${GREP_DEFAULT_HEAD_LIMIT}) and ${GREP_MAX_OUTPUT_CHARS} characters; a search is stopped after ${GREP_TIMEOUT_MS / 1000} s. Paths are relative to the workspace root.`,
    schema: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "The regular expression to search for." },
        path: {
          type: "string",
          description:
            "File or directory to search, relative to the workspace root (default: the root).",
        },
        glob: {
          type: "string",
          description:
            'Only search files matching this glob (such as "*.ts" or "src/**/*.{ts,tsx}").',
        },
        type: {
          type: "string",
          description: 'Only search files of this ripgrep type (such as "ts", "py", "rust").',
        },
        output_mode: {
          type: "string",
          enum: ["files_with_matches", "content", "count"],
          description: 'What to return (default "files_with_matches").',
        },
        "-i": { type: "boolean", description: "Case-insensitive search." },
        "-n": {
          type: "boolean",
          description: 'Show line numbers (output_mode "content" only; default true).',
        },
        "-A": contextField("after"),
        "-B": contextField("before"),
        "-C": contextField("before and after"),
        head_limit: {
          type: "integer",
          minimum: 1,
          description: `At most this many lines, files or counts (default ${GREP_DEFAULT_HEAD_LIMIT}).`,
        },
        multiline: {
          type: "boolean",
          description: "Let patterns span lines, with . matching newlines.",
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "workspace", sideEffects: "none" },
    concurrencySafe: true,
    permission: { kind: "read", paths: (input) => [input.path ?? "."] },
    handler: async (input, ctx) => {
      const isHidden = hiddenFor(env, ctx, "Grep");
      const resolved = await env.workspace.resolve(input.path ?? ".");
      await assertSearchable(resolved, input.path ?? ".");
      const mode = input.output_mode ?? "files_with_matches";
      const limit = input.head_limit ?? GREP_DEFAULT_HEAD_LIMIT;
      // Files a Read deny or ask rule covers never reach the model; only their number does.
      const hidden = new Set<string>();
      // Loaded on the first search: an agent that never greps does not pay for it at import.
      const { rgPath } = await import("@vscode/ripgrep");
      const run = await runRipgrep(
        rgPath,
        env.workspace.root,
        rgArgs(input, mode, resolved.relative),
        {
          limit,
          timeoutMs,
          signal: ctx.signal,
          // With --null, "-l" ends each path with NUL; other modes print "path\0rest\n".
          separator: mode === "files_with_matches" ? "\0" : "\n",
          keep: (line) => {
            if (line === "--") return true;
            const file = stripDot(line.split("\0", 1)[0]!);
            if (!isHidden(file)) return true;
            hidden.add(file);
            return false;
          },
        },
      );
      if (ctx.signal.aborted) throw new BuiltinToolError("Grep was cancelled.");
      // rg names the files it could not read: hidden ones are left out there too.
      const stderr = withoutHidden(run.stderr, isHidden);
      if (run.exitCode === 2 && run.lines.length === 0 && !run.stopped)
        throw new BuiltinToolError(describeRgError(stderr));
      const lines = run.lines.map((line) => formatLine(line, mode));
      const notes: string[] = [];
      if (run.timedOut)
        notes.push(
          `The search took over ${timeoutMs / 1000} s and was stopped: the output may be partial. Narrow it with path, glob or type.`,
        );
      else if (run.exitCode === 2)
        notes.push(`Some files could not be searched: ${stderrText(stderr) || "(not shown)"}`);
      else if (run.stopped)
        notes.push(
          run.hitCharCap
            ? `Output reached ${GREP_MAX_OUTPUT_CHARS} characters and was cut: more results exist. Narrow the search.`
            : `Showing the first ${limit} results: more exist. Raise head_limit or narrow the search.`,
        );
      if (hidden.size > 0) notes.push(hiddenNote(hidden.size, ["file", "files"]));
      const body =
        lines.length > 0
          ? lines.join("\n")
          : mode === "content"
            ? "No matches found"
            : "No files found";
      return notes.length === 0 ? body : `${body}\n\n[${notes.join(" ")}]`;
    },
  });
}

function rgArgs(input: GrepInput, mode: OutputMode, relative: string): string[] {
  const args = [
    "--no-config",
    "--no-require-git",
    "--hidden",
    "--glob",
    "!.git",
    "--color",
    "never",
    "--with-filename",
    "--no-heading",
    "--null",
    // Path order: with output cut at head_limit, the same search gives the same answer.
    "--sort",
    "path",
  ];
  if (mode === "files_with_matches") args.push("--files-with-matches");
  else if (mode === "count") args.push("--count");
  else {
    if (input["-n"] !== false) args.push("--line-number");
    args.push("--max-columns", String(GREP_MAX_LINE_CHARS), "--max-columns-preview");
    if (input["-C"] !== undefined) args.push("--context", String(input["-C"]));
    if (input["-A"] !== undefined) args.push("--after-context", String(input["-A"]));
    if (input["-B"] !== undefined) args.push("--before-context", String(input["-B"]));
  }
  if (input["-i"]) args.push("--ignore-case");
  if (input.multiline) args.push("--multiline", "--multiline-dotall");
  if (input.glob !== undefined) args.push("--glob", input.glob);
  if (input.type !== undefined) args.push("--type", input.type);
  // `--` keeps a pattern starting with "-" a pattern; the path is always given (rg never reads stdin).
  args.push("--", input.pattern, relative === "" ? "." : relative);
  return args;
}

function formatLine(line: string, mode: OutputMode): string {
  if (line === "--") return line;
  if (mode === "files_with_matches") return stripDot(line);
  const cut = line.indexOf("\0");
  const file = stripDot(line.slice(0, cut));
  const rest = line.slice(cut + 1);
  // rg marks context lines "12-text" and matches "12:text"; keep that after the path.
  return /^\d+-/.test(rest) ? `${file}-${rest}` : `${file}:${rest}`;
}

function stripDot(file: string): string {
  return file.startsWith("./") ? file.slice(2) : file;
}

/**
 * rg reads what it is given: a FIFO would block it and /dev/zero would feed it forever. Its walks
 * skip such files; a path given explicitly must be a directory or a regular file.
 */
async function assertSearchable(resolved: ResolvedPath, input: string): Promise<void> {
  let stats: Stats;
  try {
    stats = await stat(resolved.absolute);
  } catch (error) {
    throw fsError(error, input);
  }
  if (!stats.isDirectory() && !stats.isFile())
    throw new BuiltinToolError(
      `${echo(input)} is not a regular file or directory (a FIFO, socket or device).`,
    );
}

/** rg's stderr without the lines about a file `hidden` covers ("rg: ./.env: Permission denied"). */
function withoutHidden(stderr: string, hidden: (file: string) => boolean): string {
  return stderr
    .split("\n")
    .filter((line) => {
      const text = line.replace(/^rg: /, "");
      // The path ends at some ": " (paths may contain one themselves): try each.
      for (let at = text.indexOf(": "); at !== -1; at = text.indexOf(": ", at + 1)) {
        const file = stripDot(text.slice(0, at));
        try {
          if (file !== "" && hidden(file)) return false;
        } catch {
          // A string the rules cannot match: dropped rather than risk naming a hidden file.
          return false;
        }
      }
      return true;
    })
    .join("\n");
}

function stderrText(stderr: string): string {
  return stderr.replace(/^rg: /gm, "").trim();
}

function describeRgError(stderr: string): string {
  const text = stderrText(stderr);
  if (/regex/i.test(text))
    return `Invalid regular expression (ripgrep uses Rust regex syntax):\n${text}`;
  return `Grep failed: ${text || "ripgrep exited with an error"}`;
}

interface RipgrepRun {
  lines: string[];
  exitCode: number | null;
  stderr: string;
  /** Stopped early by the caps (more results exist). */
  stopped: boolean;
  hitCharCap: boolean;
  timedOut: boolean;
}

/**
 * Runs rg and streams its stdout line by line: it is killed as soon as the caps are reached, on
 * the time cap and on abort, so neither a huge output nor a slow search is buffered or awaited.
 */
function runRipgrep(
  rgPath: string,
  cwd: string,
  args: string[],
  options: {
    limit: number;
    timeoutMs: number;
    signal: AbortSignal;
    separator: "\n" | "\0";
    keep(line: string): boolean;
  },
): Promise<RipgrepRun> {
  const run: RipgrepRun = {
    lines: [],
    exitCode: null,
    stderr: "",
    stopped: false,
    hitCharCap: false,
    timedOut: false,
  };
  const env = { ...process.env };
  delete env.RIPGREP_CONFIG_PATH;
  return new Promise((resolve, reject) => {
    const child = childProcess().spawn(rgPath, args, {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let chars = 0;
    let entries = 0;
    let pending = "";
    const stop = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    };
    const timer = setTimeout(() => {
      run.timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = () => stop();
    options.signal.addEventListener("abort", onAbort, { once: true });
    if (options.signal.aborted) stop();
    const take = (line: string) => {
      if (run.stopped || line === "" || !options.keep(line)) return;
      if (line === "--" && (run.lines.length === 0 || run.lines.at(-1) === "--")) return;
      if (entries >= options.limit || chars + line.length + 1 > GREP_MAX_OUTPUT_CHARS) {
        run.stopped = true;
        run.hitCharCap = entries < options.limit;
        stop();
        return;
      }
      run.lines.push(line);
      chars += line.length + 1;
      if (line !== "--") entries += 1;
    };
    // A throw in a stream callback would be uncaught (and end the process): it fails the call instead.
    let failed = false;
    const guard =
      <T extends unknown[]>(handle: (...args: T) => void) =>
      (...args: T) => {
        if (failed) return;
        try {
          handle(...args);
        } catch (error) {
          failed = true;
          clearTimeout(timer);
          options.signal.removeEventListener("abort", onAbort);
          stop();
          reject(error);
        }
      };
    child.stdout.setEncoding("utf8");
    child.stdout.on(
      "data",
      guard((data: string) => {
        pending += data;
        let start = 0;
        for (let end = pending.indexOf(options.separator); end !== -1; ) {
          take(pending.slice(start, end));
          start = end + 1;
          end = pending.indexOf(options.separator, start);
        }
        pending = pending.slice(start);
        // --max-columns bounds content lines; a runaway one (a huge path?) is not kept whole.
        if (pending.length > GREP_MAX_OUTPUT_CHARS)
          pending = pending.slice(0, GREP_MAX_OUTPUT_CHARS);
      }),
    );
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (data: string) => {
      if (run.stderr.length < MAX_STDERR_CHARS) run.stderr += data.slice(0, MAX_STDERR_CHARS);
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      // The error's message names the binary's host path: give the code only.
      reject(new BuiltinToolError(`Grep could not start ripgrep (${codeOf(error) ?? "error"}).`));
    });
    child.on(
      "close",
      guard((code: number | null) => {
        clearTimeout(timer);
        options.signal.removeEventListener("abort", onAbort);
        if (pending !== "") take(pending);
        // A trailing context separator says nothing.
        if (run.lines.at(-1) === "--") run.lines.pop();
        run.exitCode = code;
        resolve(run);
      }),
    );
  });
}

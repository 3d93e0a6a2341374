/**
 * BashOutput's `filter`: a regular expression from the model, tested against each output line.
 * A pattern can backtrack for ever (`^(a+)+$` against `aaaa…b`), and a RegExp cannot be stopped
 * from the outside, so the matching runs inside `vm.runInNewContext` with a time limit: V8
 * terminates the script, backtracking included, when the limit passes. Lines are cut before they
 * are tested, which bounds the work of a pattern that is slow but not exponential.
 */
import { BuiltinToolError } from "../define.ts";
import { vm } from "../node-modules.ts";

/** Time for testing every line of one BashOutput call. */
export const FILTER_TIMEOUT_MS = 200;
/** Only this many characters of a line are tested (the whole line is returned when it matches). */
export const FILTER_LINE_CHARS = 10_000;

/** Compiles the filter once; an invalid pattern is an error for the model. */
export function compileFilter(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch (error) {
    throw new BuiltinToolError(
      `filter is not a valid regular expression: ${(error as Error).message}`,
    );
  }
}

/** The lines of `text` the filter matches; an error when matching takes too long. */
export function filterLines(text: string, filter: RegExp): string {
  const lines = text.split("\n");
  const tested = lines.map((line) => line.slice(0, FILTER_LINE_CHARS));
  let matched = matchLines(tested, filter, FILTER_TIMEOUT_MS);
  // The vm's limit is wall-clock time. On a starved machine a simple pattern can pass it while
  // the process waits for a core, so a timeout that used little CPU gets one longer try.
  if ("timedOutAfterCpuMs" in matched && matched.timedOutAfterCpuMs < FILTER_TIMEOUT_MS / 2)
    matched = matchLines(tested, filter, FILTER_TIMEOUT_MS * STARVED_RETRY_FACTOR);
  if ("timedOutAfterCpuMs" in matched)
    throw new BuiltinToolError(
      `The filter took too long (over ${FILTER_TIMEOUT_MS} ms for this output), probably because the pattern backtracks heavily (nested quantifiers such as (a+)+). Use a simpler pattern; the output was not consumed, so BashOutput can read it again.`,
    );
  return matched.hits.map((index) => lines[index]).join("\n");
}

/** The longer limit of the retry after a timeout that spent little CPU. */
const STARVED_RETRY_FACTOR = 5;

function matchLines(
  lines: string[],
  filter: RegExp,
  timeout: number,
): { hits: number[] } | { timedOutAfterCpuMs: number } {
  const before = process.cpuUsage();
  try {
    const hits = vm().runInNewContext(
      "const hits = []; for (let i = 0; i < lines.length; i++) if (filter.test(lines[i])) hits.push(i); hits",
      { filter, lines },
      { timeout },
    ) as number[];
    return { hits };
  } catch (error) {
    if ((error as { code?: string }).code !== "ERR_SCRIPT_EXECUTION_TIMEOUT") throw error;
    const spent = process.cpuUsage(before);
    return { timedOutAfterCpuMs: (spent.user + spent.system) / 1000 };
  }
}

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
  let matched: unknown;
  try {
    matched = vm().runInNewContext(
      "const hits = []; for (let i = 0; i < lines.length; i++) if (filter.test(lines[i])) hits.push(i); hits",
      { filter, lines: tested },
      { timeout: FILTER_TIMEOUT_MS },
    );
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") {
      throw new BuiltinToolError(
        `The filter took too long (over ${FILTER_TIMEOUT_MS} ms for this output), probably because the pattern backtracks heavily (nested quantifiers such as (a+)+). Use a simpler pattern; the output was not consumed, so BashOutput can read it again.`,
      );
    }
    throw error;
  }
  return (matched as number[]).map((index) => lines[index]).join("\n");
}

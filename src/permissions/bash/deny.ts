/**
 * What deny and ask rules are tried against: every command a Bash call may run, as far as the
 * text tells (wrappers and paths stripped, `find -exec` clauses, the code given to `eval`, `trap`,
 * `bash -c`, `alias` and the like analysed again), and whether some program it runs cannot be
 * named from the text at all ("opaque"): then any deny rule could match it (RELIABILITY C9-C11).
 */
import { analyzeAt } from "./analyze.ts";
import { codeTexts } from "./code.ts";
import { couldMatchBashPattern } from "./patterns.ts";
import { type CommandAnalysis, HOLE, holesOf, list, type SimpleCommand } from "./types.ts";
import { type CodeText, sliceCommand, unwrapAll } from "./unwrap.ts";

export interface DenyView {
  /** Every form of every command, originals first. */
  forms: SimpleCommand[];
  /** Why some program the command runs could be any program. */
  opaque?: string;
}

/** Bounds the re-analysis of `bash -c '...'` inside `bash -c '...'`; deeper is opaque. */
const MAX_NESTING = 4;

const FIND_EXEC = new Set(list("-exec -execdir -ok -okdir"));

const views = new WeakMap<CommandAnalysis, DenyView>();

export function denyView(analysis: CommandAnalysis): DenyView {
  let view = views.get(analysis);
  if (!view) {
    view = collectView(analysis, 0);
    views.set(analysis, view);
  }
  return view;
}

function collectView(analysis: CommandAnalysis, depth: number): DenyView {
  const collector = new Collector();
  if (analysis.kind === "complex" && analysis.opaque) collector.opaque(analysis.opaque);
  const commands = analysis.kind === "simple" ? analysis.commands : analysis.candidates;
  for (const command of commands) collector.command(command, depth);
  return collector.view();
}

class Collector {
  private forms = new Map<string, SimpleCommand>();
  private reason: string | undefined;

  opaque(reason: string): void {
    this.reason ??= reason;
  }

  view(): DenyView {
    return { forms: [...this.forms.values()], ...(this.reason ? { opaque: this.reason } : {}) };
  }

  command(command: SimpleCommand, depth: number): void {
    const unwrapped = unwrapAll(command);
    const texts: CodeText[] = [...unwrapped.texts];
    for (const form of unwrapped.forms) {
      this.add(form);
      const program = holesOf(form)[0];
      if (program?.includes(HOLE))
        this.opaque(`the program ${JSON.stringify(form.argv[0])} is only known when it runs`);
      const code = codeTexts(form, command);
      if (typeof code === "string") this.opaque(code);
      else texts.push(...code);
      for (const inner of findExec(form)) this.command(inner, depth);
    }
    for (const text of texts) this.code(text, depth);
  }

  private code(text: CodeText, depth: number): void {
    if (text.dynamic) {
      this.opaque(`it runs code built at run time (${JSON.stringify(text.text)})`);
      return;
    }
    if (depth >= MAX_NESTING) {
      this.opaque("code nested too deep to read");
      return;
    }
    const inner = analyzeAt(text.text, depth + 1);
    if (inner.kind === "complex" && inner.opaque) this.opaque(inner.opaque);
    const commands = inner.kind === "simple" ? inner.commands : inner.candidates;
    for (const command of commands) this.command(command, depth + 1);
  }

  private add(form: SimpleCommand): void {
    const key = JSON.stringify([form.assignments, form.argv, form.holes ?? null]);
    if (!this.forms.has(key)) this.forms.set(key, form);
  }
}

/** The commands `find -exec ... ;` (and `+`) runs; `{}` is a file name known at run time. */
function findExec(form: SimpleCommand): SimpleCommand[] {
  if (form.argv[0] !== "find") return [];
  const commands: SimpleCommand[] = [];
  form.argv.forEach((arg, at) => {
    if (!FIND_EXEC.has(arg)) return;
    const rest = form.argv.slice(at + 1);
    const end = rest.findIndex((a) => a === ";" || a === "+");
    const inner = sliceCommand(form, at + 1, end < 0 ? undefined : at + 1 + end);
    if (inner.argv.length === 0) return;
    const holes = holesOf(inner).map((w) => (w.includes("{}") ? HOLE : w));
    commands.push({ ...inner, holes, via: "find" });
  });
  return commands;
}

/**
 * The forms a deny rule is also tried against: the command with its assignments removed, with
 * wrappers stripped (repeatedly), with a path before the program reduced to its basename, the
 * commands inside `find -exec`, and the commands in code given to a shell, `eval`, `trap` and
 * the like. Returns the original first, then each distinct form.
 */
export function denyForms(command: SimpleCommand): SimpleCommand[] {
  return collectView({ kind: "simple", commands: [command] }, 0).forms;
}

/**
 * Could this deny (or ask) pattern match any part of the command? True when a form matches
 * (text known only at run time may be anything), or when some program is opaque. Used so a deny
 * is never downgraded to ask.
 */
export function denyCouldMatch(pattern: string, analysis: CommandAnalysis, _raw?: string): boolean {
  const view = denyView(analysis);
  return view.opaque !== undefined || view.forms.some((f) => couldMatchBashPattern(pattern, f));
}

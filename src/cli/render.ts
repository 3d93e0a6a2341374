import yoctoSpinner, { type Spinner } from "yocto-spinner";
import type { AgentEvent } from "../index.ts";
import {
  compact,
  formatDuration,
  formatUsage,
  oneLine,
  printable,
  type RunTotals,
  resultText,
  truncate,
} from "./format.ts";
import type { Terminal } from "./terminal.ts";

/** Shows a run as it happens. Every event goes through `event`, in order. */
export interface Renderer {
  event(event: AgentEvent): void;
  /** A line of the command's own (the demo's label, "stopping"): on stderr, never on stdout. */
  notice(text: string): void;
  /**
   * The steering line being typed ("" when there is none): shown in the status line, never
   * where the answer's text streams.
   */
  typing(draft: string): void;
  /** The usage line, once at the end of the command's run (text mode; `--json` has the results). */
  usage(totals: RunTotals): void;
  /** Stops the spinner and ends a half-written line; call before the command's last lines. */
  close(): void;
}

/** `--json`: NDJSON events on stdout; text mode: the answer on stdout, the rest on stderr. */
export function createRenderer(options: { json: boolean; terminal: Terminal }): Renderer {
  return options.json ? new JsonRenderer(options.terminal) : new TextRenderer(options.terminal);
}

/** One JSON object per line on stdout, and nothing else there (notices go to stderr). */
class JsonRenderer implements Renderer {
  readonly #terminal: Terminal;
  readonly #failedServers = new FailedServers();

  constructor(terminal: Terminal) {
    this.#terminal = terminal;
  }

  event(event: AgentEvent): void {
    this.#terminal.stdout.write(`${jsonLine(event)}\n`);
    // A server that did not start is said on stderr too: stdout may be read by a program only.
    const failed = this.#failedServers.line(event);
    if (failed !== undefined) this.notice(failed);
  }

  notice(text: string): void {
    this.#terminal.stderr.write(`${text}\n`);
  }

  // No status line: the typed line is not shown, only the `steering:` notice once it is sent.
  typing(): void {}

  usage(): void {}

  close(): void {}
}

/**
 * One line per MCP server that could not be reached or listed (its tools are missing), the first
 * time it fails in the command's runs; escaped, as the message may quote the server.
 */
class FailedServers {
  readonly #said = new Set<string>();

  line(event: AgentEvent): string | undefined {
    if (event.type !== "mcp_server_error" || this.#said.has(event.server)) return undefined;
    this.#said.add(event.server);
    return `MCP server ${printable(event.server)} is unavailable, its tools are missing: ${printable(oneLine(event.error.message))}`;
  }
}

function jsonLine(event: AgentEvent): string {
  try {
    return JSON.stringify(event);
  } catch (error) {
    // A custom event from a tool may hold what JSON cannot (a cycle, a BigInt): keep the line valid.
    return JSON.stringify({
      type: event.type,
      unserializable: error instanceof Error ? error.message : String(error),
    });
  }
}

interface RunningCall {
  name: string;
  title: string;
  update?: string;
}

/**
 * The answer's text streams to stdout as it arrives. Tool calls, retries and usage are lines on
 * stderr; on an interactive terminal a spinner shows what is running (the model, or the tools
 * with their latest progress), otherwise each start and progress update is a plain line.
 */
class TextRenderer implements Renderer {
  readonly #terminal: Terminal;
  readonly #spinner: Spinner | undefined;
  /** stdout's last write did not end its line. */
  #midLine = false;
  /** What the model is doing while no text arrives: shown by the spinner only. */
  #waiting: string | undefined;
  /** The steering line being typed: in the spinner's line while it shows, kept while it does not. */
  #draft = "";
  readonly #running = new Map<string, RunningCall>();
  readonly #failedServers = new FailedServers();

  constructor(terminal: Terminal) {
    this.#terminal = terminal;
    this.#spinner = terminal.interactive
      ? yoctoSpinner({
          stream: terminal.stderr as NodeJS.WriteStream,
          // The command owns SIGINT: a first Ctrl-C stops the run cleanly instead of exiting.
          handleSignals: false,
        })
      : undefined;
  }

  event(event: AgentEvent): void {
    const { colors } = this.#terminal;
    switch (event.type) {
      case "turn_start":
        this.#waiting = "waiting for the model";
        break;
      case "thinking_delta":
        this.#waiting = "thinking";
        break;
      case "text_delta":
        this.#waiting = undefined;
        this.#text(event.text);
        return;
      case "message":
        this.#waiting = undefined;
        this.#endText();
        break;
      case "retry":
        this.#line(
          colors.yellow(
            `retrying in ${formatDuration(event.delayMs)} (attempt ${event.attempt + 1}): ${printable(oneLine(event.error.message))}`,
          ),
        );
        break;
      case "tool_start": {
        // A label is the tool's own (an MCP server's title): shown escaped, as its input is.
        const name = printable(event.label ?? event.name);
        const title = `${name} ${compact(event.input, 60)}`;
        this.#running.set(event.callId, { name, title });
        if (!this.#spinner) this.#line(`${colors.dim("→")} ${title}`);
        break;
      }
      case "tool_update": {
        const update = compact(event.update, 80);
        const call = this.#running.get(event.callId);
        if (call) call.update = update;
        if (!this.#spinner) this.#line(colors.dim(`  ${call?.name ?? event.name}: ${update}`));
        break;
      }
      case "tool_end": {
        const title = this.#running.get(event.callId)?.title ?? event.name;
        this.#running.delete(event.callId);
        const mark = event.isError ? colors.red("✗") : colors.green("✓");
        const outcome = compact(resultText(event.result), 100);
        this.#line(`${mark} ${title} ${colors.dim(formatDuration(event.durationMs))} → ${outcome}`);
        break;
      }
      case "hook_error":
        this.#line(
          colors.yellow(
            `the ${event.hook} hook failed for ${event.name}: ${printable(oneLine(event.error.message))}`,
          ),
        );
        break;
      case "mcp_server_error": {
        const failed = this.#failedServers.line(event);
        if (failed !== undefined) this.#line(colors.yellow(failed));
        break;
      }
      case "result":
        // The usage line comes once, at the end of the command's run (`usage`), not per stretch.
        this.#waiting = undefined;
        this.#running.clear();
        this.#endText();
        break;
      default:
        // run_start, turn_end and custom events have nothing to show in text mode.
        break;
    }
    this.#refresh();
  }

  notice(text: string): void {
    this.#line(text);
    this.#refresh();
  }

  typing(draft: string): void {
    this.#draft = draft;
    this.#refresh();
  }

  usage(totals: RunTotals): void {
    this.#line(this.#terminal.colors.dim(formatUsage(totals)));
  }

  close(): void {
    this.#spinner?.stop();
    this.#endText();
  }

  #text(text: string): void {
    if (!text) return;
    this.#spinner?.stop();
    this.#terminal.stdout.write(text);
    this.#midLine = !text.endsWith("\n");
  }

  #endText(): void {
    if (!this.#midLine) return;
    this.#terminal.stdout.write("\n");
    this.#midLine = false;
  }

  #line(text: string): void {
    this.#endText();
    this.#spinner?.stop();
    this.#terminal.stderr.write(`${text}\n`);
  }

  /** Shows the spinner while something runs, with what it is; hides it otherwise. */
  #refresh(): void {
    const spinner = this.#spinner;
    if (!spinner) return;
    const status = this.#status();
    if (status === undefined) {
      spinner.stop();
      return;
    }
    // The spinner redraws its whole line: never on a line the answer's text is still on.
    this.#endText();
    const text = withDraft(status, this.#draft, (this.#terminal.stderr.columns || 80) - 3);
    if (spinner.isSpinning) spinner.text = text;
    else spinner.start(text);
  }

  #status(): string | undefined {
    const calls = [...this.#running.values()];
    if (calls.length === 1) {
      const [call] = calls as [RunningCall];
      return call.update ? `${call.title} · ${call.update}` : call.title;
    }
    if (calls.length > 1) {
      const counts = new Map<string, number>();
      for (const call of calls) counts.set(call.name, (counts.get(call.name) ?? 0) + 1);
      const names = [...counts].map(([name, count]) => (count > 1 ? `${name} ×${count}` : name));
      const latest = calls.findLast((call) => call.update !== undefined);
      const progress = latest ? ` · ${latest.name}: ${latest.update}` : "";
      return `running ${calls.length} tools: ${names.join(", ")}${progress}`;
    }
    return this.#waiting === undefined ? undefined : `${this.#waiting}…`;
  }
}

/**
 * The status, then the line being typed after "›", within `width` characters: the end of the
 * typed line (where the user types) stays visible, the status gives way first. Escaped, as what
 * is typed or pasted may hold format characters.
 */
export function withDraft(status: string, draft: string, width: number): string {
  if (draft === "") return truncate(status, width);
  const typed = Array.from(printable(draft));
  // The status keeps up to a third of the line; the typed text has the rest.
  const room = Math.max(1, width - Math.min(status.length, Math.floor(width / 3)) - 3);
  const shown =
    typed.length > room ? `…${typed.slice(typed.length - room + 1).join("")}` : typed.join("");
  return `${truncate(status, Math.max(1, width - Array.from(shown).length - 3))} › ${shown}`;
}

import type { ErrorInfo, SDKResultMessage } from "../index.ts";
import { oneLine } from "./format.ts";
import type { ProviderName } from "./provider.ts";
import { suggestedAllowRule } from "./suggest-rule.ts";

/** A mistake the user can fix (no key, an empty prompt): printed as one line, exit code 1. */
export class CliError extends Error {
  override name = "CliError";
}

/** What a failure message may point the user to. */
export interface FailureContext {
  provider: ProviderName;
  modelId: string;
  /** `--max-turns` as given, when given. */
  maxTurns?: number;
  /** Why approvals could not be asked on this terminal (no /dev/tty, the input ended). */
  unasked?: string;
}

const ENV_NAMES: Record<ProviderName, { key: string; baseURL: string }> = {
  anthropic: { key: "ANTHROPIC_API_KEY", baseURL: "ANTHROPIC_BASE_URL" },
  openai: { key: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL" },
  google: { key: "GEMINI_API_KEY", baseURL: "GOOGLE_GEMINI_BASE_URL" },
};

/** Why a run that did not succeed ended, as one line that says what to do; undefined on success. */
export function describeFailure(
  result: SDKResultMessage,
  context: FailureContext,
): string | undefined {
  switch (result.subtype) {
    case "success":
      return undefined;
    case "error_max_turns":
      return `stopped after ${result.numTurns} turns without a final answer; allow more with --max-turns (now ${context.maxTurns ?? "the default, 100"}).`;
    case "paused": {
      const pending = result.pending ?? [];
      const approvals = pending.filter((call) => call.reason === "approval").length;
      const what =
        approvals === pending.length
          ? "approval"
          : approvals === 0
            ? "the app to run them"
            : "approval or for the app";
      const waiting = pending.find((call) => call.reason === "approval");
      const where = context.unasked
        ? `they could not be asked: ${context.unasked}; `
        : "run it on an interactive terminal to answer, or ";
      const how =
        approvals === pending.length && waiting
          ? `${where}allow such calls with --allow (for example --allow ${suggestedAllowRule(waiting)})`
          : "this command cannot give it";
      return `the run paused: ${pending.length} tool call(s) (${pending.map((call) => call.name).join(", ")}) wait for ${what}; ${how}.`;
    }
    case "error_during_execution":
      return describeRunError(result.error, context);
  }
}

function describeRunError(error: ErrorInfo | undefined, context: FailureContext): string {
  if (!error) return "the run failed without saying why.";
  const message = oneLine(error.message).replace(/\.$/, "");
  const names = ENV_NAMES[context.provider];
  switch (error.name) {
    case "APIConnectionError":
    case "APITimeoutError":
      return `${message}. Check --base-url or ${names.baseURL}.`;
    case "NotFoundError":
      return `the model API answered ${message}. Check the model name (--model, now "${context.modelId}") and the base URL.`;
    case "AuthenticationError":
    case "PermissionDeniedError":
      return `the model API refused the request: ${message}. Check ${names.key}.`;
    default:
      return `the run failed: ${error.name}: ${message}.`;
  }
}

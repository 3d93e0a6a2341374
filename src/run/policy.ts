// Permission modes (design/policy.md): a filter on top of the rules' decision for one call, the
// mode a run is under (switchable while it works), and a child's (the stricter of its own and its
// parent's).

import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import { builtinInfo } from "../tools/builtin-mark.ts";
import type { ToolDefinition } from "../tools/types.ts";
import { agentRuntimeOf } from "./link.ts";
import type { PermissionDecision } from "./permission-layer.ts";

/** How a run treats the calls its rules would ask about; see docs/policy.md. */
export type PermissionMode = "default" | "acceptEdits" | "plan" | "dontAsk" | "bypassPermissions";

/** Least strict first. */
export const PERMISSION_MODES: readonly PermissionMode[] = [
  "bypassPermissions",
  "acceptEdits",
  "default",
  "dontAsk",
  "plan",
];

const RANK = new Map(PERMISSION_MODES.map((mode, index) => [mode, index]));

/** The stricter of two modes. */
export function stricterMode(a: PermissionMode, b: PermissionMode): PermissionMode {
  return RANK.get(a)! >= RANK.get(b)! ? a : b;
}

/** Checks a mode given by an app; an unknown value is a `ConfigurationError` naming it. */
export function checkPermissionMode(
  where: string,
  value: unknown,
  hardened: boolean,
): PermissionMode | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !RANK.has(value as PermissionMode))
    throw new ConfigurationError(
      `${where}: permissionMode ${describeValue(value)} is not a permission mode; use one of ${PERMISSION_MODES.map((mode) => `"${mode}"`).join(", ")}.`,
    );
  if (value === "bypassPermissions" && hardened)
    throw new ConfigurationError(
      `${where}: permissionMode "bypassPermissions" is refused under the hardened preset (it would approve every call the rules ask about); use "acceptEdits" or "dontAsk", or drop the preset.`,
    );
  return value as PermissionMode;
}

/**
 * The mode of one run, switchable while it works (`setPermissionMode` on the stream handle). A
 * mode set before the run starts wins over the one the run starts with (its options, its state).
 */
export class ModeCell {
  #mode: PermissionMode | undefined;
  #hardened = false;
  #listener: ((mode: PermissionMode, previous: PermissionMode) => void) | undefined;

  constructor(given?: PermissionMode) {
    this.#mode = given;
  }

  get current(): PermissionMode {
    return this.#mode ?? "default";
  }

  /** The run starts: its mode unless one was set, its preset, and who hears of a change. */
  start(
    initial: PermissionMode,
    hardened: boolean,
    listener: (mode: PermissionMode, previous: PermissionMode) => void,
  ): void {
    this.#hardened = hardened;
    this.#mode ??= initial;
    checkPermissionMode("permissionMode", this.#mode, hardened);
    this.#listener = listener;
  }

  set(mode: unknown): void {
    if (mode === undefined)
      throw new ConfigurationError(
        `setPermissionMode: give a permission mode (${PERMISSION_MODES.map((m) => `"${m}"`).join(", ")}).`,
      );
    const checked = checkPermissionMode("setPermissionMode", mode, this.#hardened)!;
    const previous = this.current;
    this.#mode = checked;
    if (previous !== checked) this.#listener?.(checked, previous);
  }
}

/** Whether a call changes nothing: Read, LS, Glob, Grep, and custom tools whose `security.sideEffects` is `"none"`. */
export function isReadOnly(tool: ToolDefinition): boolean {
  const builtin = builtinInfo(tool);
  if (builtin) return builtin.permission.kind === "read";
  return tool.security?.sideEffects === "none";
}

/** The message a call gets under `plan` when it could change something. */
export function planningMessage(name: string): string {
  return `Tool "${name}" was not run: the agent is planning (permission mode "plan"), so only calls that change nothing run (Read, LS, Glob, Grep and tools without side effects). Present your plan instead; it runs once the mode changes.`;
}

/**
 * The mode's filter over the rules' decision (hooks' and tools' asks included). A deny stays a
 * deny in every mode; a call outside the workspace never runs without a person's approval, and
 * under `bypassPermissions` not at all.
 */
export function applyMode(
  mode: PermissionMode,
  tool: ToolDefinition,
  decision: PermissionDecision,
): PermissionDecision {
  if (decision.behavior === "deny" || mode === "default") return decision;
  if (mode === "plan") {
    // An agent tool's child runs under plan too (the stricter mode), so it changes nothing either.
    if (!isReadOnly(tool) && !agentRuntimeOf(tool))
      return { behavior: "deny", message: planningMessage(tool.name) };
    return decision;
  }
  if (decision.behavior === "allow") return decision;
  switch (mode) {
    case "dontAsk":
      return {
        behavior: "deny",
        message: `Permission denied: this call needs approval (${decision.reason}), and the run is in permission mode "dontAsk", where nobody is asked.`,
      };
    case "acceptEdits":
      return decision.basis === "default" && builtinInfo(tool)?.permission.kind === "edit"
        ? { behavior: "allow" }
        : decision;
    case "bypassPermissions":
      if (decision.basis === "outside")
        return {
          behavior: "deny",
          message: `Permission denied: ${decision.reason}; permission mode "bypassPermissions" never reaches outside the workspace.`,
        };
      return decision.basis === "protected" ? decision : { behavior: "allow" };
  }
}

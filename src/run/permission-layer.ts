// The seam between the engine and the rules: what it asks of a call, and what the answer is.

import type { ToolDefinition } from "../tools/types.ts";
import type { Workspace } from "../tools/workspace.ts";

/** A rule decision for one call (the permission layer's answer). */
export type PermissionDecision =
  | { behavior: "allow" }
  | { behavior: "deny"; message: string }
  | { behavior: "ask"; reason: string; basis?: AskBasis };

/**
 * Why a call asks, for the permission modes: nothing allows it (`"default"`), a rule, hook or tool
 * asks (`"rule"`, also when absent), a protected path (`"protected"`), or it reaches outside the
 * workspace (`"outside"`).
 */
export type AskBasis = "default" | "rule" | "protected" | "outside";

/**
 * What the engine asks of the permission layer (src/permissions): the engine knows rules only
 * through this, as it knows providers only through `Model`.
 */
export interface PermissionLayer {
  /**
   * Synchronous where no file system access is needed: a permission check then costs no await.
   * `base`: the workspace the call's paths are relative to, when it is a child agent's (inside
   * this layer's own).
   */
  decide(
    tool: ToolDefinition,
    input: unknown,
    base?: Workspace,
  ): PermissionDecision | Promise<PermissionDecision>;
  /** Deny rules alone, for input an approval rewrote or a resumed state carries. */
  denial(
    tool: ToolDefinition,
    input: unknown,
    base?: Workspace,
  ): string | undefined | Promise<string | undefined>;
  /** Tools a bare deny rule hides from the model (`tool`: the definition, when the layer's agent has none of that name). */
  hides(name: string, tool?: ToolDefinition): boolean;
  /** Whether LS, Glob and Grep leave this workspace-relative path out (rules that deny or ask reading it). */
  hiddenFromSearch?(relative: string, tool: string, base?: Workspace): boolean;
}

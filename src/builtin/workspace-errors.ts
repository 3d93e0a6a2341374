/** What goes wrong with a model-given path, as errors whose messages name its path only. */
import { BuiltinToolError } from "./define.ts";

/** Linux's own limit on symlink hops in one path resolution (MAXSYMLINKS). */
export const MAX_SYMLINK_HOPS = 40;
/** Model-given paths are echoed in messages; a runaway one is cut. */
const MAX_ECHO = 200;

/**
 * What went wrong with a model-given path, for callers that react to one case (LS turning
 * "not a directory" into advice, Glob rewording "outside"): they test `code`, never the message.
 */
export type PathErrorCode =
  /** Leads outside the workspace (through "..", an absolute path or a symlink). */
  | "outside"
  /** A symlink was swapped in between resolving and opening. */
  | "changed"
  /** Write or Edit was given a symbolic link as the final component. */
  | "symlink"
  /** Not a usable path string (not a string, a NUL byte). */
  | "invalid"
  | "missing"
  | "loop"
  | "not-a-directory"
  | "is-a-directory"
  /** Any other file-system error (permissions, space, read-only, ...). */
  | "io";

/** A path refused by the workspace layer: a `BuiltinToolError` (its message goes to the model) with a code. */
export class WorkspacePathError extends BuiltinToolError {
  override name = "WorkspacePathError";
  readonly code: PathErrorCode;
  constructor(message: string, code: PathErrorCode) {
    super(message);
    this.code = code;
  }
}

/** True when `error` is a workspace path error with this code. */
export function isPathError(error: unknown, code: PathErrorCode): error is WorkspacePathError {
  return error instanceof WorkspacePathError && error.code === code;
}

/** The model's own string, safe to put in a message. */
export function echo(input: string): string {
  return input.length > MAX_ECHO ? `${input.slice(0, MAX_ECHO)}…` : input;
}

export function outsideError(input: string, how = ""): WorkspacePathError {
  return new WorkspacePathError(
    `${echo(input)} is outside the workspace${how}. Use a path relative to the workspace root, or an absolute path inside it.`,
    "outside",
  );
}

export function changedError(input: string): WorkspacePathError {
  return new WorkspacePathError(
    `${echo(input)} changed while it was being opened (a symbolic link was swapped in). Try again.`,
    "changed",
  );
}

export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * A file-system error as a message for the model: what went wrong with the path it gave, never
 * the host path the error object carries.
 */
export function fsError(error: unknown, input: string): BuiltinToolError {
  if (error instanceof BuiltinToolError) return error;
  const shown = echo(input);
  const fail = (message: string, code: PathErrorCode = "io") =>
    new WorkspacePathError(message, code);
  switch (codeOf(error)) {
    case "ENOENT":
      return fail(`${shown} does not exist.`, "missing");
    case "ELOOP":
      return fail(
        `${shown} cannot be resolved: too many levels of symbolic links (a loop, or a chain over ${MAX_SYMLINK_HOPS}).`,
        "loop",
      );
    case "ENOTDIR":
      return fail(`${shown}: a component of the path is not a directory.`, "not-a-directory");
    case "EISDIR":
      return fail(`${shown} is a directory.`, "is-a-directory");
    case "EACCES":
    case "EPERM":
      return fail(`${shown}: permission denied.`);
    case "ENXIO":
      return fail(`${shown} is not a regular file (a socket or device).`);
    case "ENOSPC":
      return fail(`${shown}: no space left on the device.`);
    case "EROFS":
      return fail(`${shown}: the file system is read-only.`);
    case "ENAMETOOLONG":
      return fail(`${shown}: the path is too long.`);
    default:
      return fail(`${shown}: ${codeOf(error) ?? "file system error"}.`);
  }
}

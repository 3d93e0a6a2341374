import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import { sealValue } from "./seal.ts";

/** The variable an agent reads when it is given no `approvalSecret`. */
export const APPROVAL_SECRET_ENV = "SKEIN_APPROVAL_SECRET";

/** The `approvalSecret` value that asks for a key that lives and dies with the process. */
export const PER_PROCESS = "per-process";

const MIN_LENGTH = 16;

/** What a paused run needs to resume elsewhere, as the messages say it. */
const HOW =
  `a random string of at least ${MIN_LENGTH} characters shared by every process that resumes ` +
  "the agent's runs (for example the output of `openssl rand -hex 32`)";

/**
 * The key of an agent's seals: `approvalSecret`, else `$SKEIN_APPROVAL_SECRET`; undefined means
 * the per-process key. An agent whose runs outlive the process (a durable `sessionStore`) must
 * have a shared one, or say `"per-process"`: otherwise a run it pauses could never be resumed
 * after a restart or on another machine, which is found out only when the user answers.
 */
export function resolveApprovalSecret(
  prefix: string,
  given: unknown,
  needs: { durableStore: boolean },
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (given === PER_PROCESS) return undefined;
  if (given !== undefined) return checkSecret(`${prefix}: approvalSecret`, given);
  const fromEnv = env[APPROVAL_SECRET_ENV];
  // An empty variable counts as unset, as for keys and base URLs.
  if (fromEnv !== undefined && fromEnv !== "") return checkSecret(APPROVAL_SECRET_ENV, fromEnv);
  if (needs.durableStore)
    throw new ConfigurationError(
      `${prefix}: an agent with a sessionStore needs an approvalSecret option or the ${APPROVAL_SECRET_ENV} environment variable: ${HOW}. Without one, a run it pauses can be resumed only by this process. Give approvalSecret: "${PER_PROCESS}" to accept that.`,
    );
  return undefined;
}

/**
 * A shared secret given to a part of skein that resumes runs (a worker, `resumeRun`): the
 * option, else the variable; required.
 */
export function requireApprovalSecret(
  prefix: string,
  given: unknown,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (given === PER_PROCESS)
    throw new ConfigurationError(
      `${prefix}: approvalSecret "${PER_PROCESS}" cannot be used here: runs on the queue pause in one process and resume in another. Give ${HOW}.`,
    );
  const secret = resolveApprovalSecret(prefix, given, { durableStore: false }, env);
  if (secret === undefined)
    throw new ConfigurationError(
      `${prefix}: needs an approvalSecret option or the ${APPROVAL_SECRET_ENV} environment variable: ${HOW}. Every worker and every process that enqueues or resumes runs must share it.`,
    );
  return secret;
}

function checkSecret(source: string, value: unknown): string {
  if (typeof value !== "string" || value.length < MIN_LENGTH)
    throw new ConfigurationError(
      `${source} must be ${HOW}, received ${typeof value === "string" ? `a string of ${value.length} characters` : describeValue(value)}.`,
    );
  return value;
}

/**
 * An agent served where its runs resume in other processes (a queue worker) takes the shared
 * secret: its own, when it has one, must be that secret (never `"per-process"`).
 */
export function checkSharedSecret(own: unknown, shared: string): void {
  if (own === undefined || own === shared) return;
  throw new ConfigurationError(
    own === PER_PROCESS
      ? `its approvalSecret is "${PER_PROCESS}", but a run on the queue pauses on one worker and resumes on another; leave the agent's approvalSecret out (the worker gives its own).`
      : "it has an approvalSecret of its own that differs from the worker's; a run on the queue pauses on one worker and resumes on another, so every worker and agent needs the same one (leave the agent's out: the worker gives its own).",
  );
}

/** A name for a secret that reveals nothing of it: two processes compare these, never the secrets. */
export function secretId(secret: string): string {
  return sealValue(secret, ["skein approval secret id", 1]).slice(0, 22);
}

// agent.runNext(mailbox): the receiving end of handoffs.

import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import type { Restrictions } from "../run/config.ts";
import type { SDKResultMessage } from "../run/types.ts";
import { isMailbox, type Mailbox, type MailboxMessage } from "./mailbox.ts";
import type { AgentHandle } from "./registry.ts";

export interface RunNextOptions {
  /** The recipient name to claim for; default the agent's `id`. */
  to?: string | undefined;
  signal?: AbortSignal | undefined;
}

const RUN_NEXT_KEYS: ReadonlySet<string> = new Set(["to", "signal"]);

/**
 * Claims the oldest message for this agent and runs it as a top-level run, narrowed by the
 * restrictions the message carries; acks it once the run resolves, whatever its subtype. A run
 * that rejects (aborted) leaves the message claimed and unacked. No message: `undefined`.
 */
export async function runNext(
  handle: AgentHandle,
  mailbox: Mailbox,
  options: RunNextOptions | undefined,
): Promise<(SDKResultMessage & { task: MailboxMessage }) | undefined> {
  assertKnownOptions("RunNextOptions", options, RUN_NEXT_KEYS);
  if (!isMailbox(mailbox))
    throw new ConfigurationError(
      `runNext(mailbox): expected a mailbox with post, claim and ack (createMailbox()), received ${describeValue(mailbox)}.`,
    );
  const to = options?.to ?? handle.config.id;
  if (typeof to !== "string" || to === "")
    throw new ConfigurationError(
      "runNext(mailbox): this agent has no id; give runNext(mailbox, { to }) the recipient name its messages are posted to.",
    );
  options?.signal?.throwIfAborted();
  const task = await mailbox.claim(to);
  if (!task) return undefined;
  const carried = task.restrictions;
  // A handoff always carries its sender's restrictions (empty lists when there are none): a
  // mailbox that lost them would widen what the task may do, so the task is refused (it stays
  // claimed, unacked).
  if (task.from !== undefined && !isRestrictions(carried))
    throw new ConfigurationError(
      `runNext(mailbox): message ${task.id} was handed off without the restrictions its sender posted (its "restrictions" field is missing or malformed); a Mailbox must store each message's restrictions as posted. The task was not run.`,
    );
  const narrowing =
    carried !== undefined &&
    carried.deny.length +
      carried.ask.length +
      carried.hidden.length +
      (carried.allowed?.length ?? 0) >
      0;
  const target = narrowing ? handle.narrowed(carried) : handle;
  const result = await target.run(task.prompt, options?.signal ? { signal: options.signal } : {});
  await mailbox.ack(task.id);
  return { ...result, task };
}

export function isRestrictions(value: unknown): value is Restrictions {
  const candidate = value as Partial<Restrictions> | null;
  const strings = (list: unknown) =>
    Array.isArray(list) && list.every((entry) => typeof entry === "string");
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    strings(candidate.deny) &&
    strings(candidate.ask) &&
    strings(candidate.hidden) &&
    (candidate.allowed === undefined ||
      (Array.isArray(candidate.allowed) && candidate.allowed.every(strings)))
  );
}

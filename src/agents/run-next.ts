// agent.runNext(mailbox): the receiving end of handoffs.

import { ConfigurationError } from "../errors.ts";
import { assertKnownOptions, describeValue } from "../options.ts";
import type { SDKResultMessage } from "../run/types.ts";
import { isMailbox, type Mailbox, type MailboxMessage } from "./mailbox.ts";
import type { AgentHandle } from "./registry.ts";

export interface RunNextOptions {
  /** The recipient name to claim for; default the agent's `id`. */
  to?: string;
  signal?: AbortSignal;
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
  const narrowing = carried && carried.deny.length + carried.ask.length + carried.hidden.length > 0;
  const target = narrowing ? handle.narrowed(carried) : handle;
  const result = await target.run(task.prompt, options?.signal ? { signal: options.signal } : {});
  await mailbox.ack(task.id);
  return { ...result, task };
}

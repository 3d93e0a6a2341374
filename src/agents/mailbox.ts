// Handoffs: tasks posted for another agent, claimed one at a time (design/agents.md, "Handoff
// mode and the mailbox"). The interface is the seam for durable mailboxes (a session store, a
// job queue): three async methods, string ids, per-recipient order, no callbacks.

import { randomUUID } from "node:crypto";
import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import type { Restrictions } from "../run/config.ts";

export interface MailboxMessage {
  id: string;
  /** The recipient: an agent's `id` (or the name `runNext` is given). */
  to: string;
  prompt: string;
  /** The run and call that handed the task off. */
  from?: { sessionId: string; callId: string };
  postedAt: number;
  /**
   * The sender chain's deny and ask rules, hidden tools and `allowedTools` lists: `runNext` adds
   * them to the recipient's own, so a handoff never gives the recipient more than the sender had.
   * A handoff always posts them; a mailbox must store and return them as posted (`runNext`
   * refuses a handed-off message without them).
   */
  restrictions?: Restrictions;
}

export type MailboxPost = Pick<MailboxMessage, "to" | "prompt" | "from" | "restrictions">;

export interface Mailbox {
  post(message: MailboxPost): Promise<MailboxMessage>;
  /** The oldest unclaimed message for `to`, taken atomically: no two claims get the same one. */
  claim(to: string): Promise<MailboxMessage | undefined>;
  /** The message was handled; a second ack is a no-op. */
  ack(id: string): Promise<void>;
}

/**
 * A mailbox in this process's memory: per recipient, messages are claimed in the order their
 * `post` resolved, and a claimed message is never handed out again (at most once), acked or not.
 */
export function createMailbox(): Mailbox {
  const queues = new Map<string, MailboxMessage[]>();
  const claimed = new Map<string, { acked: boolean }>();
  return {
    async post(message) {
      const posted = checkPost(message);
      const queue = queues.get(posted.to) ?? [];
      queues.set(posted.to, queue);
      queue.push(posted);
      return structuredClone(posted);
    },
    async claim(to) {
      if (typeof to !== "string" || to === "")
        throw new ConfigurationError(
          `mailbox.claim(to): to must be a recipient name, received ${describeValue(to)}.`,
        );
      const message = queues.get(to)?.shift();
      if (!message) return undefined;
      claimed.set(message.id, { acked: false });
      return structuredClone(message);
    },
    async ack(id) {
      const entry = claimed.get(id);
      if (!entry)
        throw new ConfigurationError(
          `mailbox.ack(id): ${describeValue(id)} is not the id of a claimed message.`,
        );
      entry.acked = true;
    },
  };
}

/** A message as posted: checked, with its id and time, and copied (the caller's object stays theirs). */
export function checkPost(message: MailboxPost): MailboxMessage {
  if (typeof message !== "object" || message === null)
    throw new ConfigurationError(
      `mailbox.post(message): message must be { to, prompt }, received ${describeValue(message)}.`,
    );
  if (typeof message.to !== "string" || message.to === "")
    throw new ConfigurationError(
      `mailbox.post(message): to must be the recipient's name, received ${describeValue(message.to)}.`,
    );
  if (typeof message.prompt !== "string")
    throw new ConfigurationError(
      `mailbox.post(message): prompt must be a string, received ${describeValue(message.prompt)}.`,
    );
  const posted: MailboxMessage = {
    id: randomUUID(),
    to: message.to,
    prompt: message.prompt,
    postedAt: Date.now(),
  };
  if (message.from !== undefined) posted.from = { ...message.from };
  if (message.restrictions !== undefined)
    posted.restrictions = structuredClone(message.restrictions);
  return posted;
}

export function isMailbox(value: unknown): value is Mailbox {
  const candidate = value as Partial<Mailbox> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.post === "function" &&
    typeof candidate.claim === "function" &&
    typeof candidate.ack === "function"
  );
}

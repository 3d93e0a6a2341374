// pgBossMailbox(): handoffs across machines. A posted task becomes a run job on the recipient
// agent's queue, in a session of its own ("handoff-<message id>") that the first delivery creates,
// so a delivery retried after a crash continues the same run instead of starting a second.

import { checkPost, type Mailbox, type MailboxMessage } from "../agents/mailbox.ts";
import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import { checkJobOptions, queueOf, sendRun } from "./queue.ts";
import type { JobOptions, PgBossJob, PgBossLike, RunJobData } from "./types.ts";
import { checkBoss } from "./worker.ts";

/** A handoff's session (and run) id is this prefix and its message id. */
export const HANDOFF_PREFIX = "handoff-";

const MAILBOX_KEYS: ReadonlySet<string> = new Set(["jobOptions"]);

export function pgBossMailbox(boss: PgBossLike, options?: { jobOptions?: JobOptions }): Mailbox {
  const prefix = "pgBossMailbox()";
  checkBoss(prefix, boss);
  assertKnownOptions(prefix, options, MAILBOX_KEYS);
  const jobOptions = checkJobOptions(prefix, options?.jobOptions);
  /** Claimed messages (for runNext in this process): message id -> its queue. */
  const claimed = new Map<string, string>();
  return {
    async post(message) {
      const posted = checkPost(message);
      const queue = queueOf("pgBossMailbox.post()", posted.to);
      const data: RunJobData = {
        sessionId: HANDOFF_PREFIX + posted.id,
        runId: HANDOFF_PREFIX + posted.id,
        prompt: posted.prompt,
        handoff: posted.id,
      };
      if (posted.from) data.from = posted.from;
      if (posted.restrictions) data.restrictions = posted.restrictions;
      await sendRun(boss, queue, data, jobOptions, { id: posted.id });
      return posted;
    },
    async claim(to) {
      const queue = queueOf("pgBossMailbox.claim()", to);
      const [job] = (await boss.fetch(queue, { batchSize: 1 })) as PgBossJob<RunJobData>[];
      if (!job) return undefined;
      const data = job.data;
      if (data?.handoff === undefined || typeof data.prompt !== "string") {
        // A plain run job: it belongs to the workers, not to runNext. Back on the queue.
        await boss.fail(queue, job.id, {
          error: "claimed by pgBossMailbox.claim(), which takes handoffs only",
        });
        return undefined;
      }
      claimed.set(job.id, queue);
      const message: MailboxMessage = {
        id: data.handoff,
        to,
        prompt: data.prompt,
        postedAt: Date.now(),
      };
      if (data.from) message.from = data.from;
      if (data.restrictions) message.restrictions = data.restrictions;
      return message;
    },
    async ack(id) {
      const queue = claimed.get(id);
      if (queue === undefined)
        throw new ConfigurationError(
          `pgBossMailbox.ack(id): ${describeValue(id)} is not the id of a message claimed here.`,
        );
      await boss.complete(queue, id);
      claimed.delete(id);
    },
  };
}

// The pg-boss side: one queue per agent, created with the singleton policy, and the send options
// every run job gets.

import { setTimeout as sleep } from "node:timers/promises";
import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import type { JobOptions, PgBossLike, RunJobData } from "./types.ts";

const AGENT_NAME = /^[A-Za-z0-9_.-]{1,100}$/;
export const QUEUE_PREFIX = "skein.run.";

/** The queue of an agent's runs. */
export function queueOf(prefix: string, agent: unknown): string {
  if (typeof agent !== "string" || !AGENT_NAME.test(agent))
    throw new ConfigurationError(
      `${prefix}: agent must be an agent's name of 1-100 characters from A-Z, a-z, 0-9, "_", "." and "-", received ${describeValue(agent)}.`,
    );
  return QUEUE_PREFIX + agent;
}

/**
 * skein's defaults under `jobOptions`: retries with backoff (a run that failed because the
 * database went away is picked up again and recovered from its log), and pg-boss's own expiry
 * (how long a job may stay active: the longest a dead worker's run waits to be handed out again).
 */
const DEFAULT_JOB_OPTIONS: JobOptions = {
  retryLimit: 20,
  retryDelay: 2,
  retryBackoff: true,
  expireInSeconds: 15 * 60,
};

const RESERVED = new Set(["singletonKey", "id", "singletonSeconds", "singletonNextSlot"]);

export function checkJobOptions(prefix: string, value: unknown): JobOptions {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ConfigurationError(
      `${prefix}: jobOptions must be pg-boss send options ({ retryLimit, expireInSeconds, ... }), received ${describeValue(value)}.`,
    );
  for (const key of Object.keys(value))
    if (RESERVED.has(key))
      throw new ConfigurationError(
        `${prefix}: jobOptions.${key} is skein's to set (one run per session at a time is keyed by the session id); leave it out.`,
      );
  return value as JobOptions;
}

/** Sends a run job: at most one runs per session (the queue's singleton policy, keyed by session). */
export async function sendRun(
  boss: PgBossLike,
  queue: string,
  data: RunJobData,
  jobOptions: JobOptions,
  extra?: { id?: string; startAfter?: Date },
): Promise<string> {
  await ensureQueue(boss, queue);
  const id = await boss.send(queue, data, {
    ...DEFAULT_JOB_OPTIONS,
    ...jobOptions,
    ...extra,
    singletonKey: data.sessionId,
  });
  if (!id)
    throw new ConfigurationError(
      `pg-boss did not create the job for session "${data.sessionId}" on ${queue} (send returned ${describeValue(id)}); check the queue's policy and the job options.`,
    );
  return id;
}

const ensured = new WeakMap<object, Map<string, Promise<void>>>();

/**
 * Creates the queue once per boss, with the singleton policy (under pg-boss 10's default
 * "standard" policy a singletonKey does nothing). Two workers starting together both call
 * createQueue, which can deadlock (40P01) or collide (23505) in 10.4: look first, retry on those.
 */
export function ensureQueue(boss: PgBossLike, queue: string): Promise<void> {
  let known = ensured.get(boss);
  if (!known) {
    known = new Map();
    ensured.set(boss, known);
  }
  let made = known.get(queue);
  if (!made) {
    made = createOnce(boss, queue).catch((error) => {
      known.delete(queue);
      throw error;
    });
    known.set(queue, made);
  }
  return made;
}

async function createOnce(boss: PgBossLike, queue: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const existing = await boss.getQueue(queue);
    if (existing) {
      if (existing.policy !== undefined && existing.policy !== "singleton")
        throw new ConfigurationError(
          `pg-boss queue "${queue}" exists with the "${existing.policy}" policy; skein needs "singleton" (one run per session at a time). Delete the queue (boss.deleteQueue) or let skein create it.`,
        );
      return;
    }
    try {
      await boss.createQueue(queue, { name: queue, policy: "singleton" });
      return;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if ((code !== "40P01" && code !== "23505") || attempt >= 8) throw error;
      await sleep(20 * attempt + Math.random() * 50);
    }
  }
}

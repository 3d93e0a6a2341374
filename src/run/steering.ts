// Steering and follow-ups (design/interactive.md, "Steering and follow-ups"): messages for a
// running agent, queued by the app and delivered by the loop at its delivery points.

import { ConfigurationError, RunEndedError } from "../core/errors.ts";
import type { Message } from "../core/messages.ts";
import type { Steering } from "./agent-options.ts";
import type { QueuedMessage } from "./types.ts";
import { assertPrompt, type UserContent } from "./user-content.ts";

const queues = new WeakMap<Steering, SteeringQueue>();

/** The queue behind a `Steering`: what the app queued, and whether a run took it. */
export class SteeringQueue {
  readonly #queued: QueuedMessage[] = [];
  #ended: string | undefined;
  #taken = false;

  push(origin: QueuedMessage["origin"], message: unknown): void {
    const method = origin === "steer" ? "steer" : "followUp";
    // Checked and copied now: what the app keeps of the message cannot change the transcript later.
    const content = assertPrompt(`${method}(message)`, "message", message);
    if (this.#ended !== undefined)
      throw new RunEndedError(
        `${method}(): the run has ended (${this.#ended}); start a new run, or resume its state with a new Steering.`,
      );
    this.#queued.push({ origin, message: asUserMessage(content) });
  }

  /** Binds the queue to a run; a queue serves one run. */
  take(where: string): void {
    if (this.#taken)
      throw new ConfigurationError(
        `${where}: this Steering already serves a run; give each run a new one (createSteering()).`,
      );
    this.#taken = true;
  }

  get hasSteer(): boolean {
    return this.#queued.some((entry) => entry.origin === "steer");
  }

  /** Every queued steering message, in the order given (follow-ups stay queued). */
  takeSteer(): QueuedMessage[] {
    return this.#takeWhere((entry) => entry.origin === "steer");
  }

  /** Every queued follow-up, in the order given. */
  takeFollowUps(): QueuedMessage[] {
    return this.#takeWhere((entry) => entry.origin === "follow_up");
  }

  /** What was accepted and not delivered (for a paused state, or a failed run's `undelivered`). */
  get pending(): QueuedMessage[] {
    return this.#queued.map((entry) => structuredClone(entry));
  }

  /** Messages a resumed state carried: delivered first, as if queued before anything new. */
  restore(queued: readonly QueuedMessage[]): void {
    this.#queued.unshift(...queued.map((entry) => structuredClone(entry)));
  }

  /** The run's result is decided: later messages are refused. */
  end(outcome: string): void {
    this.#ended = outcome;
  }

  #takeWhere(keep: (entry: QueuedMessage) => boolean): QueuedMessage[] {
    const taken: QueuedMessage[] = [];
    for (let index = 0; index < this.#queued.length; ) {
      if (keep(this.#queued[index]!)) taken.push(...this.#queued.splice(index, 1));
      else index++;
    }
    return taken;
  }
}

/** A queue object for `run()` and `resume()` users: `steer` and `followUp` feed the run it is given to. */
export function createSteering(): Steering {
  const queue = new SteeringQueue();
  const steering: Steering = {
    steer: (message) => queue.push("steer", message),
    followUp: (message) => queue.push("follow_up", message),
  };
  queues.set(steering, queue);
  return steering;
}

/** The queue of a `Steering` skein made; anything else is refused. */
export function queueOf(steering: unknown, where: string): SteeringQueue {
  const queue =
    typeof steering === "object" && steering !== null
      ? queues.get(steering as Steering)
      : undefined;
  if (!queue)
    throw new ConfigurationError(
      `${where}: steering must come from createSteering() (or use the handle agent.stream() returns).`,
    );
  return queue;
}

/** A queued message as it enters the transcript: its own user message, text as a text block. */
function asUserMessage(content: UserContent): Message {
  return {
    role: "user",
    content: typeof content === "string" ? [{ type: "text", text: content }] : content,
  };
}

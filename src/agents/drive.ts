// How a run is driven for the agent object: a signal of its own that follows the caller's, and
// the two forms, run to the end or a stream of events.

import { setMaxListeners } from "node:events";
import { EventChannel } from "../run/channel.ts";
import { unheard } from "../run/new-run.ts";
import type { AgentEvent, SDKResultMessage } from "../run/types.ts";

/** Starts a run with its event sink and its signal. */
export type Start = (
  emit: (event: AgentEvent) => void,
  signal: AbortSignal,
) => Promise<SDKResultMessage>;

/**
 * Each run gets a signal of its own that follows the caller's: the engine hangs its listeners
 * (one per batch, model call and timed tool) there, never on the caller's signal. Runs that share
 * a caller's signal share one forwarding listener on it, however many run at once.
 */
const followers = new WeakMap<
  AbortSignal,
  { members: Set<AbortController>; forward: () => void }
>();

function runSignal(signal: AbortSignal | undefined): {
  controller: AbortController;
  unlink: () => void;
} {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  if (!signal) return { controller, unlink: () => {} };
  if (signal.aborted) {
    controller.abort(signal.reason);
    return { controller, unlink: () => {} };
  }
  let group = followers.get(signal);
  if (!group) {
    const members = new Set<AbortController>();
    const forward = () => {
      followers.delete(signal);
      for (const member of members) member.abort(signal.reason);
    };
    group = { members, forward };
    followers.set(signal, group);
    signal.addEventListener("abort", forward, { once: true });
  }
  const { members, forward } = group;
  members.add(controller);
  return {
    controller,
    unlink: () => {
      members.delete(controller);
      if (members.size === 0 && followers.get(signal)?.members === members) {
        followers.delete(signal);
        signal.removeEventListener("abort", forward);
      }
    },
  };
}

export async function runToEnd(
  start: Start,
  signal: AbortSignal | undefined,
): Promise<SDKResultMessage> {
  const { controller, unlink } = runSignal(signal);
  try {
    return await start(unheard, controller.signal);
  } finally {
    unlink();
  }
}

/** One loop for both forms: the stream is the loop's events pushed through a channel. */
export async function* streamEvents(
  start: Start,
  signal: AbortSignal | undefined,
): AsyncGenerator<AgentEvent, void, undefined> {
  const { controller, unlink } = runSignal(signal);
  const channel = new EventChannel<AgentEvent>();
  let settled = false;
  const done = start((event) => channel.push(event), controller.signal).then(
    (result) => {
      settled = true;
      channel.push(result);
      channel.close();
    },
    (error: unknown) => {
      settled = true;
      channel.fail(error);
    },
  );
  try {
    yield* channel;
  } finally {
    // The consumer stopped early: abort, and wait for started handlers to settle.
    if (!settled) {
      controller.abort(new Error("The stream's consumer stopped reading."));
      await done;
    }
    unlink();
  }
}

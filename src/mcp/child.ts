// A stdio server's process must not keep the app alive while it idles: an app that forgot
// agent.close() would never exit. Its process and pipes are unreferenced while no request is in
// flight, and referenced while one is (the handshake, a tools/list, a call, a ping, closing), so
// that the answer is waited for even when nothing else keeps the event loop going.

import type { ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";

/** Runs `work` with the server's process referenced (it keeps the event loop alive meanwhile). */
export type Hold = <T>(work: () => Promise<T>) => Promise<T>;

/**
 * The process the MCP SDK's StdioClientTransport started. The transport offers only its `pid`
 * and keeps the ChildProcess in `_process`, read here and nowhere else. The alternatives cost
 * more: spawning it ourselves means a transport of our own (framing, shutdown), and a subclass
 * would change the SDK's connect (its version probe on a sibling process is for the base class
 * only). When a later SDK keeps it elsewhere, nothing is unreferenced: the app then stays alive
 * until close(), as it did before.
 */
function childOf(transport: object): ChildProcess | undefined {
  const child: unknown = Reflect.get(transport, "_process");
  return isChildProcess(child) ? child : undefined;
}

/** A handle the event loop may wait for or not: a process, or a pipe (a net.Socket). */
interface Referable {
  ref(): unknown;
  unref(): unknown;
}

// Known by shape, not by class: importing skein/mcp does not load node:child_process or node:net.
function referable(value: unknown): value is Referable {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof Reflect.get(value, "ref") === "function" &&
    typeof Reflect.get(value, "unref") === "function"
  );
}

function isChildProcess(value: unknown): value is ChildProcess {
  return value instanceof EventEmitter && referable(value) && "stdin" in value && "pid" in value;
}

/** The process and its pipes (the pipes are handles of their own) referenced or not. */
function reference(child: ChildProcess, on: boolean): void {
  if (on) child.ref();
  else child.unref();
  for (const pipe of [child.stdin, child.stdout, child.stderr]) {
    // A destroyed socket has no handle; unref() would wait for a "connect" that never comes.
    if (!referable(pipe) || pipe.destroyed) continue;
    if (on) pipe.ref();
    else pipe.unref();
  }
}

/** Processes of connections not closed yet, ended when the app exits. */
const live = new Set<ChildProcess>();
let listening = false;

function endAll(): void {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill();
}

/**
 * The hold of one connection's transport: its process is referenced while at least one piece of
 * work is in flight, unreferenced otherwise (from the end of the first work on: the handshake).
 * Also kept in the set of processes ended on the app's exit: its stdin closing ends a well-behaved
 * server, and SIGTERM one that ignores that. `release` forgets it (after close()).
 */
export function holdOf(transport: object): { hold: Hold; release(): void } {
  let busy = 0;
  let tracked: ChildProcess | undefined;
  const set = (on: boolean) => {
    const child = childOf(transport);
    if (!child) return;
    if (tracked !== child) {
      if (tracked) live.delete(tracked);
      tracked = child;
      if (!listening) {
        listening = true;
        process.on("exit", endAll);
      }
      live.add(child);
      child.once("exit", () => live.delete(child));
    }
    reference(child, on);
  };
  return {
    hold: async (work) => {
      if (busy++ === 0) set(true);
      try {
        return await work();
      } finally {
        if (--busy === 0) set(false);
      }
    },
    release: () => {
      if (tracked) live.delete(tracked);
      tracked = undefined;
    },
  };
}

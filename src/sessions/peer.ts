// Loads an optional peer (better-sqlite3, pg) on first use, so a missing one is a clear error.
import { createRequire } from "node:module";
import { ConfigurationError } from "../core/errors.ts";

export interface Peer {
  /** The entry that needs it, such as "skein/sqlite". */
  entry: string;
  /** The package name, such as "better-sqlite3". */
  name: string;
  /** The range to install, such as "^12". */
  range: string;
}

const requireFromHere = createRequire(import.meta.url);
const loaded = new Map<string, unknown>();

/**
 * `require`s the peer (both are CommonJS). Loaded with `createRequire` rather than imported, so
 * importing `skein/sqlite` never fails: the factory does, with the command that fixes it.
 */
export function loadPeer<T>(peer: Peer): T {
  if (loaded.has(peer.name)) return loaded.get(peer.name) as T;
  let module: unknown;
  try {
    module = requireFromHere(peer.name);
  } catch (error) {
    throw peerError(peer, error);
  }
  loaded.set(peer.name, module);
  return module as T;
}

/** The error for a peer that is missing (or present but unloadable, such as a native module never built). */
export function peerError(peer: Peer, error: unknown): ConfigurationError {
  const install = `npm install ${peer.name}@${peer.range}`;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === "MODULE_NOT_FOUND" && message.includes(`'${peer.name}'`)) {
    return new ConfigurationError(`${peer.entry} needs ${peer.name}: ${install}`, {
      cause: error,
    });
  }
  return new ConfigurationError(
    `${peer.entry} could not load ${peer.name} (${message}). Reinstall it: ${install}`,
    { cause: error },
  );
}

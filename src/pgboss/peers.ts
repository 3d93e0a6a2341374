// skein/pgboss needs pg-boss and pg, both optional peers: one error names every missing one.

import { ConfigurationError } from "../core/errors.ts";
import { loadPeer, type Peer } from "../sessions/peer.ts";

const PEERS: Peer[] = [
  { entry: "skein/pgboss", name: "pg-boss", range: "^10.4" },
  { entry: "skein/pgboss", name: "pg", range: "^8" },
];

/** Throws one `ConfigurationError` naming every peer that cannot be loaded, with the install command. */
export function requirePeers(prefix: string): void {
  const missing: string[] = [];
  let cause: unknown;
  for (const peer of PEERS) {
    try {
      loadPeer(peer);
    } catch (error) {
      missing.push(`${peer.name}@${peer.range}`);
      cause ??= error;
    }
  }
  if (missing.length > 0)
    throw new ConfigurationError(
      `${prefix}: skein/pgboss needs ${missing.join(" and ")}: npm install ${missing.join(" ")}`,
      { cause },
    );
}

/** The PgBoss class (pg-boss 10 is CommonJS: the module is the class). */
export function pgBossClass(prefix: string): new (options: object | string) => unknown {
  requirePeers(prefix);
  const module = loadPeer<{ default?: unknown }>(PEERS[0]!);
  return ((module as { default?: unknown }).default ?? module) as new (
    options: object | string,
  ) => unknown;
}

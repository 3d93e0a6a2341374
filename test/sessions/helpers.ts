// Helpers of the session store tests: store child processes, and opening stores for conformance.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SessionStore } from "skein";
import { postgresStore } from "skein/postgres";
import { sqliteStore } from "skein/sqlite";
import type { OpenSessionStore } from "skein/testing";
import { type Child, runChild } from "../support/children.ts";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { useTempDir } from "../support/temp.ts";

const CHILDREN = fileURLToPath(new URL("children", import.meta.url));

/** What a child script is told: which store to open, and what to do with it. */
export type ChildStore =
  | { kind: "sqlite"; path: string }
  | { kind: "postgres"; url: string; schema: string };

/** A store child process: its stdout lines, `until(predicate)` (no time limit but the test's). */
export type StoreChild = Child;

/** Runs `test/sessions/children/<script>` from source (through tsx), with one JSON argument. */
export function startChild(script: string, argument: unknown): StoreChild {
  return runChild(CHILDREN, script, argument);
}

/**
 * The stores a child process can open, for the tests of a file: a SQLite file in a temp directory
 * (`dir`, removed after them, also for the tests' other files) and a schema of a throwaway
 * Postgres (started before them). `backings` is the table for `describe.each`.
 */
export function useChildBackings(prefix: string): {
  dir: string;
  backings: [string, (name: string) => ChildStore][];
} {
  const dir = useTempDir(prefix);
  const postgres = useThrowawayPostgres();
  return {
    dir,
    backings: [
      ["sqliteStore (a real file)", (name) => ({ kind: "sqlite", path: join(dir, `${name}.db`) })],
      [
        "postgresStore (a real server)",
        (name) => ({ kind: "postgres", url: postgres().url, schema: name }),
      ],
    ],
  };
}

/** Opens the store a child would, in this process. */
export function openChildStore(config: ChildStore): SessionStore {
  return config.kind === "sqlite"
    ? sqliteStore({ path: config.path })
    : postgresStore({ connectionString: config.url, schema: config.schema });
}

/**
 * An `open` for the conformance suite over any backing: `fresh()` names a new empty one (a file,
 * a schema), `connect` opens a store on it; `sameAs` opens a second object on the same backing.
 */
export function openOn<TBacking>(
  fresh: () => TBacking,
  connect: (backing: TBacking) => SessionStore,
): OpenSessionStore {
  const backings = new WeakMap<SessionStore, TBacking>();
  return (options) => {
    const backing = options?.sameAs ? backings.get(options.sameAs) : fresh();
    if (backing === undefined) throw new Error("sameAs names a store this open() did not make");
    const store = connect(backing);
    backings.set(store, backing);
    return store;
  };
}

// sessionStoreConformance(open): the cases every SessionStore must pass, for any test runner.
import assert from "node:assert/strict";
import { ConfigurationError, SkeinError } from "../core/errors.ts";
import type { SessionStore } from "../core/session-store.ts";
import { largeEntry, unicodeEntries } from "./session-store-data.ts";

export interface OpenSessionStoreOptions {
  /**
   * Open a second store object over the same data as this one (the same file, database, schema),
   * for the racing case. A store that cannot have two objects on one backing returns `sameAs`.
   */
  sameAs?: SessionStore | undefined;
}

/** Returns a new, empty store; or, given `sameAs`, another object over that store's data. */
export type OpenSessionStore = (
  options?: OpenSessionStoreOptions,
) => SessionStore | Promise<SessionStore>;

export interface SessionStoreCase {
  name: string;
  run: () => Promise<void>;
}

export interface SessionStoreConformanceOptions {
  /**
   * Also check the optional leases (`lease`, `renew`, `release`: what skein/pgboss needs of a
   * store); a store without them then fails those cases.
   */
  leases?: boolean | undefined;
}

/**
 * The session store contract as test cases, each opening and closing its own stores. Plain
 * `node:assert`, so any runner works: `for (const c of cases) test(c.name, c.run)`.
 */
export function sessionStoreConformance(
  open: OpenSessionStore,
  options?: SessionStoreConformanceOptions,
): SessionStoreCase[] {
  if (typeof open !== "function") {
    throw new ConfigurationError(
      "sessionStoreConformance(open): open must be a function that returns a new, empty store.",
    );
  }
  const withStore = async (body: (store: SessionStore) => Promise<void>): Promise<void> => {
    const store = await open();
    try {
      await body(store);
    } finally {
      await store.close();
    }
  };
  const cases: [string, (store: SessionStore) => Promise<void>][] = [
    ["append and read keep seq order", appendAndRead],
    ["read returns only the entries after `after`", readAfter],
    ["read returns a copy the caller owns", readIsACopy],
    ["a repeated seq conflicts and writes nothing", repeatedSeq],
    ["a skipped seq conflicts and writes nothing", skippedSeq],
    ["a batch is all or nothing", batchAllOrNothing],
    ["sessions are isolated from each other", isolation],
    ["list is newest first, ties broken by order of appends", listOrder],
    ["delete removes a session, and its id starts again at seq 1", deleteAndReuse],
    ["an unknown session reads [] and is not created by reading", unknownSession],
    ["a 16 MiB entry is kept byte for byte", largeEntries],
    ["Unicode entries are kept byte for byte", unicode],
  ];
  // Leases are optional: a store that has them (postgresStore) is checked on them too.
  const leaseCases: [string, (store: LeasingStore) => Promise<void>][] = [
    ["a lease has one owner at a time; its owner may take it again", leaseOneOwner],
    ["renew keeps a lease its owner holds, and fails for anyone else", leaseRenew],
    ["release frees a lease only for its owner", leaseRelease],
    ["an expired lease can be taken by another owner; the old owner cannot renew it", leaseExpiry],
  ];
  const withLeases = (body: (store: LeasingStore) => Promise<void>) =>
    withStore(async (store) => body(leasing(store)));
  return [
    ...cases.map(([name, body]) => ({ name, run: () => withStore(body) })),
    { name: "racing appends at one seq: exactly one wins", run: () => racingAppends(open) },
    ...(options?.leases
      ? [
          ...leaseCases.map(([name, body]) => ({
            name: `leases: ${name}`,
            run: () => withLeases(body),
          })),
          { name: "leases: racing takers: exactly one wins", run: () => racingLeases(open) },
        ]
      : []),
  ];
}

type LeasingStore = SessionStore & Required<Pick<SessionStore, "lease" | "renew" | "release">>;

function leasing(store: SessionStore): LeasingStore {
  for (const method of ["lease", "renew", "release"] as const)
    assert.equal(typeof store[method], "function", `the store has no ${method}() method`);
  return store as LeasingStore;
}

async function leaseOneOwner(store: LeasingStore): Promise<void> {
  assert.deepEqual(await store.lease("leased", "a", 60_000), { acquired: true });
  const held = await store.lease("leased", "b", 60_000);
  assert.equal(held.acquired, false, "a second owner took a held lease");
  if (!held.acquired) {
    assert.equal(held.owner, "a");
    assert.ok(
      held.expiresInMs > 0 && held.expiresInMs <= 60_000,
      `expiresInMs ${held.expiresInMs}`,
    );
  }
  assert.deepEqual(await store.lease("leased", "a", 60_000), { acquired: true });
  assert.deepEqual(await store.lease("other", "b", 60_000), { acquired: true });
}

async function leaseRenew(store: LeasingStore): Promise<void> {
  await store.lease("renewed", "a", 60_000);
  assert.equal(await store.renew("renewed", "a", 60_000), true);
  assert.equal(await store.renew("renewed", "b", 60_000), false);
  assert.equal(await store.renew("never-leased", "a", 60_000), false);
}

async function leaseRelease(store: LeasingStore): Promise<void> {
  await store.lease("released", "a", 60_000);
  await store.release("released", "b");
  assert.equal((await store.lease("released", "b", 60_000)).acquired, false);
  await store.release("released", "a");
  assert.deepEqual(await store.lease("released", "b", 60_000), { acquired: true });
}

async function leaseExpiry(store: LeasingStore): Promise<void> {
  await store.lease("expiring", "a", 50);
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.deepEqual(await store.lease("expiring", "b", 60_000), { acquired: true });
  assert.equal(await store.renew("expiring", "a", 60_000), false);
}

async function racingLeases(open: OpenSessionStore): Promise<void> {
  const first = leasing(await open());
  let second: LeasingStore | undefined;
  try {
    second = leasing(await openSecond(open, first));
    const takers = [first, second, first, second];
    for (let round = 1; round <= 10; round += 1) {
      const outcomes = await Promise.all(
        takers.map((store, taker) => store.lease(`raced-${round}`, `taker-${taker}`, 60_000)),
      );
      const won = outcomes.filter((outcome) => outcome.acquired).length;
      assert.equal(won, 1, `round ${round}: ${won} takers got the lease`);
    }
  } finally {
    if (second && second !== first) await second.close();
    await first.close();
  }
}

/** Asserts the promise rejects with a SessionConflictError (by brand and name: duplicate installs fit). */
async function conflicts(promise: Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(
      SkeinError.isInstance(error) && error.name === "SessionConflictError",
      `${what}: expected a SessionConflictError, got ${String(error)}`,
    );
    return true;
  });
}

const entriesOf = (data: string[], from = 1) => data.map((d, i) => ({ seq: from + i, data: d }));

async function lastSeqOf(store: SessionStore, sessionId: string): Promise<number | undefined> {
  return (await store.list()).find((info) => info.sessionId === sessionId)?.lastSeq;
}

async function appendAndRead(store: SessionStore): Promise<void> {
  await store.append("order", 1, ["a", "b"]);
  await store.append("order", 3, ["c"]);
  await store.append("order", 4, ["d", "e", "f"]);
  assert.deepEqual(await store.read("order"), entriesOf(["a", "b", "c", "d", "e", "f"]));
  assert.equal(await lastSeqOf(store, "order"), 6);
}

async function readAfter(store: SessionStore): Promise<void> {
  await store.append("after", 1, ["a", "b", "c", "d"]);
  assert.deepEqual(await store.read("after", { after: 0 }), entriesOf(["a", "b", "c", "d"]));
  assert.deepEqual(await store.read("after", {}), entriesOf(["a", "b", "c", "d"]));
  assert.deepEqual(await store.read("after", { after: 2 }), entriesOf(["c", "d"], 3));
  assert.deepEqual(await store.read("after", { after: 3 }), entriesOf(["d"], 4));
  assert.deepEqual(await store.read("after", { after: 4 }), []);
  assert.deepEqual(await store.read("after", { after: 1000 }), []);
}

async function readIsACopy(store: SessionStore): Promise<void> {
  const written = ["first", "second"];
  await store.append("copy", 1, written);
  written[0] = "changed after the append";
  const read = await store.read("copy");
  read[0]!.data = "changed by the caller";
  read[1]!.seq = 99;
  read.push({ seq: 3, data: "pushed" });
  read.reverse();
  assert.deepEqual(await store.read("copy"), entriesOf(["first", "second"]));
}

async function repeatedSeq(store: SessionStore): Promise<void> {
  await store.append("repeat", 1, ["a", "b"]);
  await conflicts(store.append("repeat", 1, ["x"]), "seq 1 again");
  await conflicts(store.append("repeat", 2, ["x", "y"]), "seq 2, inside the stored entries");
  assert.deepEqual(await store.read("repeat"), entriesOf(["a", "b"]));
  assert.equal(await lastSeqOf(store, "repeat"), 2);
  await store.append("repeat", 3, ["c"]);
  assert.deepEqual(await store.read("repeat"), entriesOf(["a", "b", "c"]));
}

async function skippedSeq(store: SessionStore): Promise<void> {
  await conflicts(store.append("skip", 2, ["x"]), "seq 2 for a session not yet stored");
  assert.deepEqual(await store.read("skip"), []);
  assert.deepEqual(await store.list(), []);
  await store.append("skip", 1, ["a"]);
  await conflicts(store.append("skip", 3, ["x"]), "seq 3 after seq 1");
  await conflicts(store.append("skip", 100, ["x"]), "seq 100 after seq 1");
  assert.deepEqual(await store.read("skip"), entriesOf(["a"]));
  assert.equal(await lastSeqOf(store, "skip"), 1);
}

async function batchAllOrNothing(store: SessionStore): Promise<void> {
  const batch = Array.from({ length: 50 }, (_, i) => `entry ${i}`);
  await store.append("batch", 1, ["a"]);
  await conflicts(store.append("batch", 1, batch), "a 50-entry batch at a taken seq");
  assert.deepEqual(await store.read("batch"), entriesOf(["a"]));
  assert.equal(await lastSeqOf(store, "batch"), 1);
  await store.append("batch", 2, batch);
  assert.deepEqual(await store.read("batch", { after: 1 }), entriesOf(batch, 2));
  assert.equal(await lastSeqOf(store, "batch"), 51);
  await conflicts(store.append("batch", 51, batch), "a batch overlapping the last entry");
  assert.equal((await store.read("batch")).length, 51);
}

async function isolation(store: SessionStore): Promise<void> {
  await store.append("s", 1, ["s1"]);
  await store.append("S", 1, ["S1", "S2"]); // ids are case-sensitive
  await store.append("s.", 1, ["dot"]);
  await store.append("s", 2, ["s2"]);
  await conflicts(store.append("S", 2, ["x"]), "a conflict in S");
  assert.deepEqual(await store.read("s"), entriesOf(["s1", "s2"]));
  assert.deepEqual(await store.read("S"), entriesOf(["S1", "S2"]));
  assert.deepEqual(await store.read("s."), entriesOf(["dot"]));
  assert.equal(await store.delete("s"), true);
  assert.deepEqual(await store.read("S"), entriesOf(["S1", "S2"]));
  assert.deepEqual(await store.read("s."), entriesOf(["dot"]));
}

async function listOrder(store: SessionStore): Promise<void> {
  assert.deepEqual(await store.list(), []);
  const before = Date.now();
  const ids = Array.from({ length: 30 }, (_, i) => `session-${i}`);
  // Many appends within one millisecond: the order must come from the store's counter.
  for (const id of ids) await store.append(id, 1, [id]);
  const first = await store.list();
  assert.deepEqual(
    first.map((info) => info.sessionId),
    [...ids].reverse(),
  );
  await store.append("session-3", 2, ["again"]);
  await conflicts(store.append("session-7", 1, ["x"]), "a conflicting append");
  const second = await store.list();
  assert.deepEqual(
    second.map((info) => info.sessionId),
    ["session-3", ...[...ids].reverse().filter((id) => id !== "session-3")],
  );
  const after = Date.now();
  for (const info of second) {
    assert.deepEqual(Object.keys(info).sort(), ["createdAt", "lastSeq", "sessionId", "updatedAt"]);
    assert.equal(info.lastSeq, info.sessionId === "session-3" ? 2 : 1);
    for (const time of [info.createdAt, info.updatedAt]) {
      assert.ok(Number.isInteger(time), `times are epoch milliseconds, got ${time}`);
      // Generous bounds: a store may use its database's clock.
      assert.ok(time > before - 600_000 && time < after + 600_000, `time ${time} is not now`);
    }
    assert.ok(info.createdAt <= info.updatedAt, `${info.sessionId}: created after updated`);
    const earlier = first.find((f) => f.sessionId === info.sessionId)!;
    assert.equal(info.createdAt, earlier.createdAt, "createdAt never changes");
  }
}

async function deleteAndReuse(store: SessionStore): Promise<void> {
  await store.append("gone", 1, ["a", "b", "c"]);
  await store.append("kept", 1, ["k"]);
  assert.equal(await store.delete("gone"), true);
  assert.equal(await store.delete("gone"), false);
  assert.deepEqual(await store.read("gone"), []);
  assert.deepEqual(
    (await store.list()).map((info) => info.sessionId),
    ["kept"],
  );
  await conflicts(store.append("gone", 4, ["d"]), "seq 4 after delete");
  await store.append("gone", 1, ["new"]);
  assert.deepEqual(await store.read("gone"), entriesOf(["new"]));
  assert.equal(await lastSeqOf(store, "gone"), 1);
  assert.deepEqual(await store.read("kept"), entriesOf(["k"]));
}

async function unknownSession(store: SessionStore): Promise<void> {
  assert.deepEqual(await store.read("never"), []);
  assert.deepEqual(await store.read("never", { after: 5 }), []);
  assert.deepEqual(await store.list(), []);
  assert.equal(await store.delete("never"), false);
  await store.append("never", 1, ["first"]);
  assert.deepEqual(await store.read("never"), entriesOf(["first"]));
}

async function largeEntries(store: SessionStore): Promise<void> {
  const big = largeEntry();
  await store.append("large", 1, [big, "after"]);
  const read = await store.read("large");
  assert.equal(read.length, 2);
  sameText(read[0]!.data, big, "the 16 MiB entry");
  assert.equal(read[1]!.data, "after");
}

async function unicode(store: SessionStore): Promise<void> {
  const entries = unicodeEntries();
  await store.append("unicode", 1, entries);
  for (const [index, entry] of entries.entries()) await store.append(`u${index}`, 1, [entry]);
  const read = await store.read("unicode");
  assert.equal(read.length, entries.length);
  for (const [index, entry] of entries.entries()) {
    sameText(read[index]!.data, entry, `entry ${index} of one batch`);
    sameText((await store.read(`u${index}`))[0]!.data, entry, `entry ${index} alone`);
  }
}

/** Compares two strings without printing megabytes when they differ. */
function sameText(actual: string, expected: string, what: string): void {
  if (actual === expected) return;
  let at = 0;
  while (at < expected.length && actual.charCodeAt(at) === expected.charCodeAt(at)) at += 1;
  assert.fail(
    `${what} changed: ${actual.length} UTF-16 units read, ${expected.length} written, first difference at ${at}: ${JSON.stringify(actual.slice(at, at + 20))} instead of ${JSON.stringify(expected.slice(at, at + 20))}`,
  );
}

/**
 * The racing cases' second store object: `open({ sameAs: first })`, checked to see `first`'s
 * data, so an `open` that ignores `sameAs` fails with a message saying so rather than with the
 * race's own (two winners, which are right for two separate stores).
 */
async function openSecond(open: OpenSessionStore, first: SessionStore): Promise<SessionStore> {
  const second = await open({ sameAs: first });
  if (second === first) return second;
  const probe = `same-as-probe-${Math.random().toString(36).slice(2)}`;
  await first.append(probe, 1, ["written through the first store"]);
  const seen = await second.read(probe);
  await first.delete(probe);
  if (seen.length !== 1) {
    await second.close();
    assert.fail(
      "open({ sameAs }) returned a store that does not see sameAs's data: given `sameAs`, open must return another store object over the same file, database or schema (or `sameAs` itself, for a store that cannot have two), as the racing cases need two writers on one backing.",
    );
  }
  return second;
}

async function racingAppends(open: OpenSessionStore): Promise<void> {
  const first = await open();
  let second: SessionStore | undefined;
  try {
    second = await openSecond(open, first);
    const writers = [first, second, first, second];
    for (let seq = 1; seq <= 20; seq += 1) {
      const outcomes = await Promise.allSettled(
        writers.map((store, writer) => store.append("race", seq, [`writer ${writer} seq ${seq}`])),
      );
      const won = outcomes.filter((outcome) => outcome.status === "fulfilled");
      assert.equal(won.length, 1, `seq ${seq}: ${won.length} appends succeeded`);
      for (const outcome of outcomes) {
        if (outcome.status === "rejected") {
          await conflicts(Promise.reject(outcome.reason), `the losers at seq ${seq}`);
        }
      }
    }
    for (const store of [first, second]) {
      const read = await store.read("race");
      assert.deepEqual(
        read.map((entry) => entry.seq),
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      for (const entry of read)
        assert.match(entry.data, new RegExp(`^writer \\d seq ${entry.seq}$`));
    }
  } finally {
    if (second !== undefined && second !== first) await second.close();
    await first.close();
  }
}

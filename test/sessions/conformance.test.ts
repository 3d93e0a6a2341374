// sessionStoreConformance has teeth: a store with one defect fails the case that names it.
import { memoryStore, type SessionStore } from "skein";
import { sessionStoreConformance } from "skein/testing";
import { expect, test } from "vitest";

type Defect = (inner: SessionStore) => Partial<SessionStore>;

const DEFECTS: [string, string, Defect][] = [
  [
    "appends wherever the log ends, ignoring seq",
    "a repeated seq conflicts and writes nothing",
    (inner) => ({
      append: async (id, _seq, entries) =>
        inner.append(id, (await inner.read(id)).length + 1, entries),
    }),
  ],
  [
    "skips entries at taken seqs and writes the rest (INSERT OR IGNORE)",
    "a batch is all or nothing",
    (inner) => ({
      append: async (id, seq, entries) => {
        const last = (await inner.read(id)).length;
        if (seq > last + 1) return inner.append(id, seq, entries); // conflicts
        const fresh = entries.slice(last + 1 - seq);
        if (fresh.length > 0) await inner.append(id, last + 1, fresh);
      },
    }),
  ],
  [
    "checks the seq after an await, so racing appends both pass",
    "racing appends at one seq: exactly one wins",
    (inner) => ({
      append: async (id, seq, entries) => {
        const last = (await inner.read(id)).length;
        if (seq !== last + 1) return inner.append(id, seq, entries);
        await new Promise((resolve) => setTimeout(resolve, 1));
        return inner.append(id, (await inner.read(id)).length + 1, entries);
      },
    }),
  ],
  [
    "hands out the same result objects on every read",
    "read returns a copy the caller owns",
    (inner) => {
      const cache = new Map<string, { seq: number; data: string }[]>();
      return {
        read: async (id, options) => {
          const key = `${id}/${options?.after ?? 0}`;
          if (!cache.has(key)) cache.set(key, await inner.read(id, options));
          return cache.get(key)!;
        },
      };
    },
  ],
  [
    "lists oldest first",
    "list is newest first, ties broken by order of appends",
    (inner) => ({ list: async () => (await inner.list()).reverse() }),
  ],
  [
    "deletes the entries but not the session's seq",
    "delete removes a session, and its id starts again at seq 1",
    (inner) => {
      const deleted = new Map<string, number>();
      return {
        delete: async (id) => {
          deleted.set(id, (deleted.get(id) ?? 0) + (await inner.read(id)).length);
          return inner.delete(id);
        },
        append: async (id, seq, entries) => {
          const offset = deleted.get(id) ?? 0;
          if (seq <= offset) return inner.append(id, 1_000_000, entries); // conflicts
          return inner.append(id, seq - offset, entries);
        },
      };
    },
  ],
  [
    "normalises text to NFC",
    "Unicode entries are kept byte for byte",
    (inner) => ({
      append: (id, seq, entries) =>
        inner.append(
          id,
          seq,
          entries.map((entry) => entry.normalize("NFC")),
        ),
    }),
  ],
  [
    "cuts entries at 8 MiB",
    "a 16 MiB entry is kept byte for byte",
    (inner) => ({
      append: (id, seq, entries) =>
        inner.append(
          id,
          seq,
          entries.map((entry) => entry.slice(0, 8 * 1024 * 1024)),
        ),
    }),
  ],
  [
    "creates a session when it is read",
    "an unknown session reads [] and is not created by reading",
    (inner) => ({
      read: async (id, options) => {
        if ((await inner.read(id)).length === 0) await inner.append(id, 1, ["created by read"]);
        return inner.read(id, options);
      },
    }),
  ],
  [
    "lets a second owner take a held lease",
    "leases: a lease has one owner at a time; its owner may take it again",
    (inner) => ({
      lease: async (id, owner, ttlMs) => {
        await inner.release!(id, (await peekOwner(inner, id)) ?? owner);
        return inner.lease!(id, owner, ttlMs);
      },
    }),
  ],
  [
    "renews for any owner",
    "leases: renew keeps a lease its owner holds, and fails for anyone else",
    () => ({ renew: async () => true }),
  ],
  [
    "releases whoever holds the lease",
    "leases: release frees a lease only for its owner",
    (inner) => ({
      release: async (id) => {
        const owner = await peekOwner(inner, id);
        if (owner !== undefined) await inner.release!(id, owner);
      },
    }),
  ],
  [
    "never lets a lease expire",
    "leases: an expired lease can be taken by another owner; the old owner cannot renew it",
    (inner) => ({ lease: (id, owner) => inner.lease!(id, owner, 3_600_000) }),
  ],
  [
    "checks the holder after an await, so racing takers both win",
    "leases: racing takers: exactly one wins",
    (inner) => ({
      lease: async (id, owner, ttlMs) => {
        const free = (await peekOwner(inner, id)) === undefined;
        await new Promise((resolve) => setTimeout(resolve, 1));
        if (free) {
          const current = await peekOwner(inner, id);
          if (current !== undefined) await inner.release!(id, current);
        }
        return inner.lease!(id, owner, ttlMs);
      },
    }),
  ],
];

/** The lease's holder, found by trying to take it under a probe name. */
async function peekOwner(store: SessionStore, id: string): Promise<string | undefined> {
  const probe = await store.lease!(id, "\u0000probe", 1);
  if (probe.acquired) {
    await store.release!(id, "\u0000probe");
    return undefined;
  }
  return probe.owner;
}

async function failingCases(open: () => SessionStore): Promise<string[]> {
  const failing: string[] = [];
  for (const c of sessionStoreConformance((options) => options?.sameAs ?? open(), {
    leases: true,
  })) {
    try {
      await c.run();
    } catch {
      failing.push(c.name);
    }
  }
  return failing;
}

test("a sound store fails no case, and there are at least the contract's cases", async () => {
  expect(sessionStoreConformance(() => memoryStore()).length).toBeGreaterThanOrEqual(8);
  expect(
    sessionStoreConformance(() => memoryStore(), { leases: true }).length -
      sessionStoreConformance(() => memoryStore()).length,
  ).toBe(5);
  expect(await failingCases(() => memoryStore())).toEqual([]);
}, 120_000);

test.each(DEFECTS)(
  "a store that %s fails %j",
  async (_, caseName, defect) => {
    const failing = await failingCases(() => {
      const inner = memoryStore();
      return { ...inner, ...defect(inner) };
    });
    expect(failing).toContain(caseName);
  },
  60_000,
);

test("open must be a function", () => {
  expect(() => sessionStoreConformance(undefined as never)).toThrow(
    /open must be a function that returns a new, empty store/,
  );
});

test("an open() that ignores sameAs fails the racing cases with a message that says so", async () => {
  const messages = new Map<string, string>();
  for (const c of sessionStoreConformance(() => memoryStore(), { leases: true })) {
    if (!c.name.includes("racing")) continue;
    try {
      await c.run();
      messages.set(c.name, "passed");
    } catch (error) {
      messages.set(c.name, (error as Error).message);
    }
  }
  expect(messages.size).toBe(2);
  for (const message of messages.values()) {
    expect(message).toContain("open({ sameAs })");
    expect(message).not.toContain("appends succeeded");
  }
});

// kill -9 and racing processes, against SQLite files and a real Postgres: the log stays whole.
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { useTempDir } from "../support/temp.ts";
import { openChildStore, startChild, useChildBackings } from "./helpers.ts";

const { backings } = useChildBackings("skein-durability-");

const BATCH = 3;
const ROUNDS = 3;
const RACE_COUNT = 150;

const acked = (lines: string[]) =>
  lines.filter((line) => line.startsWith("ack ")).map((line) => Number(line.slice(4)));

describe.each(backings)("%s", (_, backing) => {
  test("kill -9 mid-append, three times: every acknowledged append is there, whole, gapless", async () => {
    const store = backing("killed");
    let highestAck = 0;
    let stored = 0;
    for (let round = 1; round <= ROUNDS; round += 1) {
      const child = startChild("store-child.ts", {
        mode: "loop",
        store,
        sessionId: "killed",
        batch: BATCH,
        pad: 2000,
      });
      // Kill after a varying number of acknowledged appends, while the next one is under way.
      const target = 20 + round * 7;
      await child.until((lines) => acked(lines).length >= target, `${target} acknowledged appends`);
      child.child.kill("SIGKILL");
      const exit = await child.exited;
      expect(exit.signal).toBe("SIGKILL");
      // The child started from what the last round left: the log as reopened below.
      expect(child.lines[0]).toBe(`ready ${stored}`);
      highestAck = Math.max(highestAck, ...acked(child.lines));

      const reopened = openChildStore(store);
      try {
        const entries = await reopened.read("killed");
        const lastSeq = entries.length;
        // Gapless from 1, whole batches only, every acknowledged seq present and intact.
        expect(entries.map((entry) => entry.seq)).toEqual(
          Array.from({ length: lastSeq }, (_, i) => i + 1),
        );
        expect(lastSeq % BATCH).toBe(0);
        expect(lastSeq).toBeGreaterThanOrEqual(highestAck);
        for (const entry of entries) {
          expect(JSON.parse(entry.data)).toEqual({ seq: entry.seq, pad: "x".repeat(2000) });
        }
        const info = (await reopened.list()).find((session) => session.sessionId === "killed");
        expect(info?.lastSeq).toBe(lastSeq);
        stored = lastSeq;
      } finally {
        await reopened.close();
      }
    }
    // The log goes on after the last kill.
    const reopened = openChildStore(store);
    const lastSeq = (await reopened.read("killed")).length;
    await reopened.append("killed", lastSeq + 1, ["after the kills"]);
    expect((await reopened.read("killed", { after: lastSeq }))[0]?.data).toBe("after the kills");
    await reopened.close();
  }, 120_000);

  test("two processes racing every seq of one session: each written once, the losers conflict", async () => {
    const store = backing("raced");
    const children = ["left", "right"].map((name) =>
      startChild("store-child.ts", {
        mode: "race",
        store,
        sessionId: "raced",
        name,
        count: RACE_COUNT,
      }),
    );
    await Promise.all(children.map((child) => child.until((l) => l.includes("ready"), "ready")));
    for (const child of children) child.child.stdin!.write("go\n");
    await Promise.all(children.map((child) => child.until((l) => l.includes("done"), "done")));
    for (const child of children) expect((await child.exited).code).toBe(0);

    const outcomes = children.map((child) =>
      child.lines.filter((line) => /^(ok|conflict|error) /.test(line)),
    );
    // Every failed append was a SessionConflictError (the child prints anything else as error).
    for (const lines of outcomes)
      expect(lines.filter((line) => line.startsWith("error"))).toEqual([]);
    const winners = new Map<number, string>();
    let conflicts = 0;
    outcomes.forEach((lines, index) => {
      const name = index === 0 ? "left" : "right";
      for (const line of lines) {
        const [outcome, seq] = line.split(" ");
        if (outcome === "conflict") conflicts += 1;
        if (outcome !== "ok") continue;
        expect(winners.has(Number(seq)), `seq ${seq} won twice`).toBe(false);
        winners.set(Number(seq), name);
      }
    });
    // Each seq was won once; both tried seq 1, so at least one append lost.
    expect([...winners.keys()].sort((a, b) => a - b)).toEqual(
      Array.from({ length: RACE_COUNT }, (_, i) => i + 1),
    );
    expect(conflicts).toBeGreaterThanOrEqual(1);
    const reopened = openChildStore(store);
    try {
      const entries = await reopened.read("raced");
      expect(entries.map((entry) => entry.data)).toEqual(
        entries.map((entry) => `${winners.get(entry.seq)} ${entry.seq}`),
      );
      expect(entries).toHaveLength(RACE_COUNT);
    } finally {
      await reopened.close();
    }
    const wins = ["left", "right"].map(
      (name) => [...winners.values()].filter((w) => w === name).length,
    );
    console.log(
      `${store.kind}: left won ${wins[0]} seqs, right ${wins[1]}, ${conflicts} appends conflicted`,
    );
  }, 120_000);
});

// Processes opening one new SQLite file at the same instant all switch it to WAL; SQLite answers
// the losers SQLITE_BUSY at once, without the busy timeout (1 open in 8 failed so, before).
describe("sqliteStore: processes opening one new file at once", () => {
  const dir = useTempDir("skein-open-race-");

  test("six processes, four new files: every open succeeds and every append is there", async () => {
    for (let round = 1; round <= 4; round += 1) {
      const path = join(dir, `opened-${round}.db`);
      // Started apart (tsx takes a while), they wait for one instant to open.
      const at = Date.now() + 4_000;
      const children = Array.from({ length: 6 }, (_, i) =>
        startChild("open-at.ts", { path, at, name: `p${i}` }),
      );
      await Promise.all(children.map((child) => child.exited));
      for (const child of children) expect(child.lines).toEqual(["opened"]);
      const store = openChildStore({ kind: "sqlite", path });
      try {
        expect((await store.list()).map((info) => info.sessionId).sort()).toEqual(
          Array.from({ length: 6 }, (_, i) => `p${i}`),
        );
      } finally {
        await store.close();
      }
    }
  }, 120_000);
});

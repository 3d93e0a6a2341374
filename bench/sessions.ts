/**
 * `npm run bench -- sessions` (design/sessions.md, "Speed"): what the write-ahead log costs. 50
 * turns of one trivial tool call each on a scripted model, runs interleaved: no store,
 * `memoryStore()`, `sqliteStore` on a file in the temp directory (WAL, "normal") and "full".
 * Reported per tool call: the median over the interleaved runs of each run's difference from the
 * no-store run beside it, in wall time less the time the thread waited for a core (on a shared
 * machine that wait is other processes' work, and it grows with the time a run takes: see
 * runQueueWaitMs); the older figure, the difference of the minimum wall times; the appends per
 * turn; and the same with a model that answers after 2 ms.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { toolTurns } from "./engine-baseline.ts";
import {
  collectGarbage,
  runQueueWaitMs,
  skein,
  spread,
  TABLE_HEADER,
  testing,
  us,
  verdict,
} from "./support.ts";

const { createBareAgent, memoryStore, tool } = skein;
const { scriptedModel } = testing;
const { sqliteStore } = (await import(
  new URL("../dist/sessions/sqlite.js", import.meta.url).href
)) as typeof import("skein/sqlite");

type SessionStore = import("skein").SessionStore;

const TURNS = 50;
let runs = 0;
const RUNS = 21;
const RUNS_SLOW = 7;

const echo = tool("echo", "Echo", z.object({ n: z.number() }), async ({ n }) => `${n}`);

/** A figure with its sign: "+5.1%", "-0.2%". */
const signed = (text: string, value: number) => (value < 0 ? text : `+${text}`);

/** A store that counts its appends. */
function counting(store: SessionStore): SessionStore & { appends: number } {
  const counted = Object.assign(Object.create(store) as SessionStore, { appends: 0 });
  counted.append = (sessionId, seq, entries) => {
    counted.appends++;
    return store.append(sessionId, seq, entries);
  };
  return counted as SessionStore & { appends: number };
}

interface Variant {
  label: string;
  /** One store per variant, as an app keeps one: runs use sessions of their own in it. */
  store?: SessionStore;
}

async function oneRun(variant: Variant, modelDelayMs: number, index: number, turns = TURNS) {
  const script = toolTurns(turns, 1, "echo");
  const model =
    modelDelayMs === 0
      ? scriptedModel(script)
      : scriptedModel(async (_request, turn) => {
          await new Promise((resolve) => setTimeout(resolve, modelDelayMs));
          return script[turn]!;
        });
  const store = variant.store ? counting(variant.store) : undefined;
  const agent = createBareAgent({
    model,
    tools: [echo],
    ...(store ? { sessionStore: store } : {}),
  });
  collectGarbage();
  const waited = runQueueWaitMs();
  const started = performance.now();
  // A session of its own per run: the store is shared, as an app's is.
  const result = await agent.run("go", { sessionId: `bench-${index}-${++runs}` });
  const elapsed = performance.now() - started;
  const working = elapsed - (runQueueWaitMs() - waited);
  if (result.subtype !== "success") throw new Error(`bench run failed: ${result.result}`);
  return {
    perCallUs: (elapsed * 1000) / TURNS,
    workUs: (working * 1000) / TURNS,
    appends: store?.appends ?? 0,
  };
}

export async function sessionsBench(): Promise<{ rows: string[][]; notes: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "skein-bench-sessions-"));
  const sqlite = (synchronous: "normal" | "full") =>
    sqliteStore({ path: path.join(dir, `${synchronous}.db`), synchronous });
  const variants: Variant[] = [
    { label: "no store" },
    { label: "memoryStore" },
    { label: "sqlite normal" },
    { label: "sqlite full" },
  ];
  variants[1]!.store = memoryStore();
  variants[2]!.store = sqlite("normal");
  variants[3]!.store = sqlite("full");
  try {
    type Outcome = Awaited<ReturnType<typeof oneRun>>;
    const measure = async (modelDelayMs: number, runs: number) => {
      const best = new Map<string, Outcome>();
      const all = new Map<string, Outcome[]>(variants.map(({ label }) => [label, []]));
      for (let index = 0; index < runs + 2; index++) {
        // Interleaved, rotating which goes first, so drift hits every variant alike.
        for (let k = 0; k < variants.length; k++) {
          const variant = variants[(index + k) % variants.length]!;
          const outcome = await oneRun(variant, modelDelayMs, index);
          if (index < 2) continue; // warm-up
          all.get(variant.label)!.push(outcome);
          const previous = best.get(variant.label);
          if (!previous || outcome.perCallUs < previous.perCallUs) best.set(variant.label, outcome);
        }
      }
      return { best, all };
    };
    /** Each run's time less that of the no-store run of the same round: median and noise. */
    const pairedAdded = (outcomes: Map<string, Outcome[]>, label: string) => {
      const base = outcomes.get("no store")!;
      return spread(
        outcomes.get(label)!.map((outcome, index) => outcome.workUs - base[index]!.workUs),
      );
    };
    const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
    const loadBefore = (() => {
      try {
        return load();
      } catch {
        return "";
      }
    })();
    // A run's own entries (its prompt, its final reply, its end) are not per turn: a run with no
    // tool turn shows how many appends they take, and the rest is divided by the turns.
    const perRun = new Map<string, number>();
    for (const variant of variants.slice(1))
      perRun.set(variant.label, (await oneRun(variant, 0, 999, 0)).appends);
    const { best: fast, all: fastAll } = await measure(0, RUNS);
    const { all: slowAll } = await measure(2, RUNS_SLOW);
    const loadAfter = loadBefore && load();
    const workMedian = (label: string) =>
      spread(fastAll.get(label)!.map((outcome) => outcome.workUs)).median;
    const base = fast.get("no store")!.perCallUs;
    const rows = [TABLE_HEADER];
    for (const { label } of variants.slice(1)) {
      const added = fast.get(label)!.perCallUs - base;
      const appends = (fast.get(label)!.appends - perRun.get(label)!) / TURNS;
      const slowBase = slowAll.get("no store")!;
      const slowAdded = spread(
        slowAll.get(label)!.map((outcome, index) => outcome.workUs / slowBase[index]!.workUs - 1),
      ).median;
      const slowMedian = (of: string) =>
        spread(slowAll.get(of)!.map((outcome) => outcome.workUs)).median;
      const paired = pairedAdded(fastAll, label);
      rows.push([
        `${label}: added per tool call, paired median`,
        us(workMedian(label)),
        us(workMedian("no store")),
        `${signed(us(paired.median), paired.median)} ± ${paired.noise.toFixed(1)}`,
        label === "sqlite normal" ? "≤ +80 µs" : "",
        label === "sqlite normal" ? verdict(paired.median <= 80) : "",
      ]);
      rows.push([
        `${label}: added per tool call, minimum wall`,
        us(fast.get(label)!.perCallUs),
        us(base),
        signed(us(added), added),
        "",
        "",
      ]);
      rows.push([
        `${label}: appends per one-tool turn`,
        appends.toFixed(2),
        "",
        "",
        "≤ 3",
        verdict(appends <= 3),
      ]);
      rows.push([
        `${label}: with a 2 ms model`,
        us(slowMedian(label)),
        us(slowMedian("no store")),
        signed(`${(slowAdded * 100).toFixed(1)}%`, slowAdded),
        label === "sqlite normal" ? "< 10%" : "",
        label === "sqlite normal" ? verdict(slowAdded < 0.1) : "",
      ]);
    }
    return {
      rows,
      notes: [
        `${RUNS} interleaved runs (${RUNS_SLOW} with the 2 ms model) of ${TURNS} one-tool turns each, per tool call.`,
        `"paired median" (and "with a 2 ms model", as a ratio): the median over the runs of each run's time less the no-store run's of the same round (± half the IQR), in wall time less the time the thread waited for a core (Linux's run-queue wait; plain wall time elsewhere). skein and baseline columns: the medians of that time.`,
        `"minimum wall": the minimum wall time of each variant over the runs, and their difference.`,
        `"appends" counts store.append calls per turn, beyond the ${perRun.get("memoryStore")} of a run with no tool turn (its prompt, final reply and end).`,
        loadBefore
          ? `Load average (1, 5, 15 min): ${loadBefore} at the start, ${loadAfter} at the end.`
          : "",
      ]
        .filter(Boolean)
        .join("\n"),
    };
  } finally {
    for (const variant of variants) await variant.store?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

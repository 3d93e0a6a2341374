// A result read back from the log alone (a queue worker that died after the run's end was logged,
// before its result was recorded) is as typed as the live one: the end entry keeps the validated
// structuredResult.
import { createBareAgent, memoryStore } from "skein";
import { scriptedModel } from "skein/testing";
import { expect, it } from "vitest";
import { z } from "zod";
import { resultFromLog } from "../../src/pgboss/results.ts";
import { loggedRun } from "../../src/sessions/run-entries.ts";
import { readSession } from "../../src/sessions/session-view.ts";

it("a typed run's end keeps its structuredResult, and the result read from the log carries it", async () => {
  const store = memoryStore();
  const agent = createBareAgent({
    model: scriptedModel([
      { toolCalls: [{ id: "f1", name: "final_output", input: { city: "Oslo", days: 3 } }] },
    ]),
    output: z.object({ city: z.string(), days: z.number() }),
    sessionStore: store,
  });
  const live = await agent.run("Plan a trip.");
  expect(live.subtype).toBe("success");
  expect(live.structuredResult).toEqual({ city: "Oslo", days: 3 });
  const view = await readSession(store, live.sessionId, undefined);
  const logged = loggedRun(view, live.checkpointId!);
  expect(logged.state).toBe("ended");
  const read = resultFromLog(
    view!,
    live.checkpointId!,
    logged.state === "ended" ? logged.end : undefined,
  );
  expect(read.subtype).toBe("success");
  expect(read.structuredResult).toEqual({ city: "Oslo", days: 3 });
});

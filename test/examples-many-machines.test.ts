/** examples/many-machines.ts: two worker processes over one throwaway Postgres, runs and handoffs. */
import { describe, expect, it } from "vitest";
import { main } from "../examples/many-machines.ts";
import { useThrowawayPostgres } from "./support/postgres.ts";

const postgres = useThrowawayPostgres();

describe("examples/many-machines.ts", () => {
  it("six runs enqueued, one followed live, each handed off to the writer; both workers took runs", async () => {
    const lines: string[] = [];
    await main(postgres().url, (line) => lines.push(line));
    expect(lines).toEqual([
      "followed: look_up, delegate",
      "runs ended: 6, articles written: 6",
      "workers that looked topics up: 2",
    ]);
  }, 120_000);
});

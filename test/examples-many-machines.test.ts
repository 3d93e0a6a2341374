/**
 * examples/many-machines.ts: two worker processes over one throwaway Postgres, runs and handoffs;
 * and the guide's example (examples/docs/many-machines.ts), against a mock Anthropic server.
 */
import { mockServer } from "skein/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { main } from "../examples/many-machines.ts";
import { logged } from "./readme-blocks.ts";
import { useThrowawayPostgres } from "./support/postgres.ts";

const postgres = useThrowawayPostgres();

afterEach(() => {
  vi.unstubAllEnvs();
});

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

describe("examples/docs/many-machines.ts", () => {
  it("a worker in this process takes the enqueued run; its events are followed and its result awaited", async () => {
    const server = await mockServer({ script: [{ text: "Two files do." }] });
    try {
      vi.stubEnv("DATABASE_URL", postgres().url);
      vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
      vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test");
      const write = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
      let lines: string[];
      let written: unknown[];
      try {
        lines = await logged(() => import("../examples/docs/many-machines.ts"));
      } finally {
        written = write.mock.calls.map(([text]) => text);
        write.mockRestore();
      }
      expect(lines).toEqual(["\nsuccess after 1 turns"]);
      expect(written.join("")).toBe("Two files do.");
      const [request] = server.requests;
      expect(JSON.stringify(request?.body.messages[0])).toContain(
        "Which files mention the retry policy?",
      );
    } finally {
      await server.close();
    }
  }, 120_000);
});

/**
 * `skein dev --database-url`: the inspector over a Postgres session store (the one `skein worker`
 * and `skein/postgres` write), approving a run an app paused there, with the shared
 * SKEIN_APPROVAL_SECRET as a worker has it. A throwaway Postgres server; a real `skein dev`.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { anthropic, createAgent } from "skein";
import { postgresStore } from "skein/postgres";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { type CliProcess, startCli } from "./helpers.ts";

const SECRET = "dev-inspector-postgres-secret-0123456789";
const postgres = useThrowawayPostgres();
let cwd: string;
let model: MockServer;
let dev: CliProcess | undefined;

beforeAll(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), "skein-dev-pg-"));
  model = await mockServer({
    script: ({ index }) =>
      index === 0
        ? {
            toolCalls: [
              { id: "p1", name: "Write", input: { file_path: "pg.txt", content: "pg\n" } },
            ],
          }
        : { text: "Wrote pg.txt." },
  });
});

afterAll(async () => {
  dev?.child.kill("SIGINT");
  await dev?.exited;
  await model?.close();
  await rm(cwd, { recursive: true, force: true });
});

it(
  "shows the sessions of a Postgres store and approves a run paused there",
  async () => {
    const url = postgres().url;
    const store = postgresStore({ connectionString: url });
    const agent = createAgent({
      model: anthropic({ baseURL: model.url, apiKey: "test-key" }),
      sessionStore: store,
      approvalSecret: SECRET,
      cwd,
    });
    expect((await agent.run("write pg.txt", { sessionId: "pg-session" })).subtype).toBe("paused");
    await agent.close();
    await store.close();

    dev = startCli(["dev", "--database-url", url], {
      cwd,
      env: {
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: "test-key",
        SKEIN_APPROVAL_SECRET: SECRET,
      },
    });
    await dev.waitFor("stdout", "\n");
    const address = new URL(/skein dev: (\S+)/.exec(dev.stdout)![1]!);
    const headers = { "x-skein-token": address.searchParams.get("token")! };
    const get = async (target: string): Promise<any> =>
      (await fetch(new URL(target, address.origin), { headers })).json();

    const { sessions } = await get("/api/sessions");
    expect(sessions).toEqual([
      expect.objectContaining({ sessionId: "pg-session", status: "paused" }),
    ]);
    const approved = await fetch(new URL("/api/sessions/pg-session/approve", address.origin), {
      method: "POST",
      headers: { ...headers, origin: address.origin, "content-type": "application/json" },
      body: JSON.stringify({ decisions: { p1: "allow" } }),
    });
    expect(approved.status, await approved.text()).toBe(202);
    await expect
      .poll(async () => (await get("/api/sessions/pg-session")).status, {
        timeout: LIVENESS_MS,
        interval: 200,
      })
      .toBe("idle");
    const run = (await get("/api/sessions/pg-session")).runs[0];
    expect(run).toMatchObject({ status: "success", result: "Wrote pg.txt." });
    expect(readFileSync(path.join(cwd, "pg.txt"), "utf8")).toBe("pg\n");
    expect(existsSync(path.join(cwd, ".skein", "sessions.db"))).toBe(false);
  },
  LIVENESS_MS * 2,
);

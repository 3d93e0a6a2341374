/**
 * `skein dev` over HTTP: a real `skein dev` process over a workspace's .skein/sessions.db, with a
 * run paused for approval by an agent of this process (sealed with the project's secret, as the
 * command seals its own). The token, the Origin and Host checks, bad ids and bodies, the JSON
 * API, and approving the paused run from the inspector.
 */
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import os from "node:os";
import path from "node:path";
import { anthropic, createAgent } from "skein";
import { sqliteStore } from "skein/sqlite";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { type CliProcess, startCli } from "./helpers.ts";

const SECRET = "dev-inspector-test-secret-0123456789";
const HOSTILE = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>`;

let cwd: string;
let server: MockServer;
let dev: CliProcess;
let base: string;
let token: string;
let pausedId: string;
let hostileId: string;

/** A gate: the steered run's second model call waits on it. */
const steerTurn = (() => {
  let reached!: () => void;
  let release!: () => void;
  const atTurn = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { reached: () => reached(), atTurn, released, release: () => release() };
})();

async function pauseOne(prompt: string, sessionId: string): Promise<void> {
  const store = sqliteStore({ path: path.join(cwd, ".skein", "sessions.db") });
  const agent = createAgent({
    model: anthropic({ baseURL: server.url, apiKey: "test-key" }),
    sessionStore: store,
    approvalSecret: SECRET,
    cwd,
  });
  const result = await agent.run(prompt, { sessionId });
  expect(result.subtype).toBe("paused");
  await agent.close();
  await store.close();
}

beforeAll(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), "skein-dev-http-"));
  await mkdir(path.join(cwd, ".skein"), { mode: 0o700 });
  await writeFile(path.join(cwd, ".skein", "approval-secret"), `${SECRET}\n`, { mode: 0o600 });
  await chmod(path.join(cwd, ".skein", "approval-secret"), 0o600);
  // Turn by turn (the count of assistant messages): a Write waiting for approval, then the answer.
  server = await mockServer({
    script: async ({ body, index }) => {
      const first = JSON.stringify(body.messages[0]);
      const write = (id: string, file: string, content: string) => ({
        toolCalls: [{ id, name: "Write", input: { file_path: file, content } }],
      });
      if (first.includes("look"))
        return index === 0 ? write("h1", "x.html", HOSTILE) : { text: "Wrote it." };
      if (first.includes("steer me")) {
        if (index === 0) return write("s1", "steer.txt", "steer\n");
        if (index === 1) {
          // The model call after the approval waits until the test has steered the run.
          steerTurn.reached();
          await steerTurn.released;
          return { text: "first answer" };
        }
        return { text: "after steering" };
      }
      if (first.includes("deny me"))
        return index === 0 ? write("d1", "denied.txt", "no\n") : { text: "Not written." };
      return index === 0 ? write("w1", "hello.txt", "hi\n") : { text: "Wrote it." };
    },
  });
  hostileId = "hostile-session";
  await pauseOne(`look ${HOSTILE}`, hostileId);
  await pauseOne("deny me", "deny-session");
  await pauseOne("steer me", "steer-session");
  pausedId = "paused-session";
  await pauseOne("write hello", pausedId);
  dev = startCli(["dev"], {
    cwd,
    env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
  });
  await dev.waitFor("stdout", "skein dev: ");
  await dev.waitFor("stdout", "\n");
  const url = new URL(/skein dev: (\S+)/.exec(dev.stdout)![1]!);
  token = url.searchParams.get("token")!;
  base = url.origin;
}, LIVENESS_MS * 2);

afterAll(async () => {
  dev?.child.kill("SIGINT");
  await dev?.exited;
  await server?.close();
  await rm(cwd, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: () => any;
}

/** A request with full control of its headers (Host and Origin included). */
function call(
  method: string,
  target: string,
  options: { headers?: Record<string, string>; body?: string; token?: string | null } = {},
): Promise<Answer> {
  const url = new URL(target, base);
  const headers: Record<string, string> = { ...options.headers };
  const given = options.token === undefined ? token : options.token;
  if (given !== null) headers["x-skein-token"] = given;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          json: () => JSON.parse(body),
        }),
      );
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

const post = (target: string, body: unknown, headers: Record<string, string> = {}) =>
  call("POST", target, {
    headers: { origin: base, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function timeline(id: string) {
  const answer = await call("GET", `/api/sessions/${id}`);
  expect(answer.status, answer.body).toBe(200);
  return answer.json();
}

describe("skein dev: who may read and drive it", () => {
  it("listens on 127.0.0.1 and prints a URL with a long random token", () => {
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(token).toMatch(/^[A-Za-z0-9_-]{32,}$/);
  });

  it("answers 401 without the token or with a wrong one, for the page and the API alike", async () => {
    for (const target of ["/", "/api/sessions", `/api/sessions/${pausedId}`, "/assets/app.js"]) {
      expect((await call("GET", target, { token: null })).status).toBe(401);
      expect((await call("GET", target, { token: `${token}x` })).status).toBe(401);
      expect((await call("GET", target, { token: token.slice(1) })).status).toBe(401);
    }
    const refused = await call("GET", "/api/sessions", { token: null });
    expect(refused.json().error).toMatch(/token/);
    expect(refused.body).not.toContain(pausedId);
    // The token in the query (how the printed URL carries it) works too.
    expect((await call("GET", `/api/sessions?token=${token}`, { token: null })).status).toBe(200);
  });

  it("serves the page with a strict Content-Security-Policy and no referrer", async () => {
    const page = await call("GET", "/");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toMatch(/text\/html/);
    expect(page.headers["content-security-policy"]).toMatch(/script-src 'self'/);
    expect(page.headers["content-security-policy"]).not.toMatch(/unsafe-inline/);
    expect(page.headers["referrer-policy"]).toBe("no-referrer");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("refuses another Host (a rebound DNS name) with 403, even with the token", async () => {
    const answer = await call("GET", "/api/sessions", { headers: { host: "attacker.example" } });
    expect(answer.status).toBe(403);
  });

  it("refuses a change without the inspector's Origin, or from another one, and nothing runs", async () => {
    const body = { decisions: { w1: "allow" } };
    const target = `/api/sessions/${pausedId}/approve`;
    const noOrigin = await call("POST", target, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(noOrigin.status).toBe(403);
    expect((await post(target, body, { origin: "http://attacker.example" })).status).toBe(403);
    expect((await post(target, body, { origin: "null" })).status).toBe(403);
    const noToken = await call("POST", target, {
      token: null,
      headers: { origin: base, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(noToken.status).toBe(401);
    // A form post (no JSON content type) cannot drive it either.
    expect((await post(target, "decisions=1", { "content-type": "text/plain" })).status).toBe(415);
    expect((await timeline(pausedId)).status).toBe("paused");
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(false);
  });
});

describe("skein dev: bad input is a clear 4xx", () => {
  it("a session id outside the charset is 400; an unknown one 404", async () => {
    const bad = await call("GET", "/api/sessions/bad%20id");
    expect(bad.status).toBe(400);
    expect(bad.json().error).toMatch(/session id/);
    expect((await call("GET", "/api/sessions/%2e%2e%2Fetc")).status).toBe(400);
    expect((await call("GET", `/api/sessions/${"a".repeat(129)}`)).status).toBe(400);
    expect((await call("GET", "/api/sessions/no-such-session")).status).toBe(404);
    expect((await post("/api/sessions/bad%20id/approve", { decisions: {} })).status).toBe(400);
    expect(
      (await post("/api/sessions/no-such/approve", { decisions: { w1: "allow" } })).status,
    ).toBe(404);
    expect((await call("GET", "/nothing-here")).status).toBe(404);
    expect((await post(`/api/sessions/${pausedId}/explode`, {})).status).toBe(404);
    expect(
      (await call("DELETE", `/api/sessions/${pausedId}`, { headers: { origin: base } })).status,
    ).toBe(405);
  });

  it("malformed JSON is 400, an oversized body 413, and nothing runs", async () => {
    const target = `/api/sessions/${pausedId}/approve`;
    const malformed = await post(target, '{"decisions": {"w1": "allow"');
    expect(malformed.status).toBe(400);
    expect(malformed.json().error).toMatch(/JSON/);
    const huge = await post(target, { decisions: { w1: "allow" }, pad: "x".repeat(200_000) });
    expect(huge.status).toBe(413);
    expect((await post(target, [1, 2])).status).toBe(400);
    expect((await post(target, { decisions: { w1: "maybe" } })).status).toBe(400);
    expect((await timeline(pausedId)).status).toBe("paused");
  });

  it("a forged call id, or one of another session, is refused and nothing runs", async () => {
    const forged = await post(`/api/sessions/${pausedId}/approve`, {
      decisions: { nope: "allow" },
    });
    expect(forged.status).toBe(400);
    expect(forged.json().error).toMatch(/does not wait for approval/);
    // h1 waits in the other session, not in this one.
    const foreign = await post(`/api/sessions/${pausedId}/approve`, { decisions: { h1: "allow" } });
    expect(foreign.status).toBe(400);
    const partial = await post(`/api/sessions/${pausedId}/approve`, { decisions: {} });
    expect(partial.status).toBe(400);
    expect(partial.json().error).toMatch(/missing: w1/);
    expect((await timeline(pausedId)).status).toBe("paused");
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(false);
  });

  it("steering a session with no run in this inspector is 409; an empty message 400", async () => {
    expect((await post(`/api/sessions/${pausedId}/steer`, { text: "hurry" })).status).toBe(409);
    expect((await post(`/api/sessions/${pausedId}/steer`, { text: "" })).status).toBe(400);
  });
});

describe("skein dev: the JSON API", () => {
  it("lists the sessions newest first, and searches by text or id", async () => {
    const listed = (await call("GET", "/api/sessions")).json();
    const ids = listed.sessions.map((session: { sessionId: string }) => session.sessionId);
    expect(ids.indexOf(pausedId)).toBeLessThan(ids.indexOf(hostileId));
    const paused = listed.sessions.find((s: { sessionId: string }) => s.sessionId === pausedId);
    expect(paused).toMatchObject({ status: "paused", prompt: "write hello", runs: 1 });
    const byText = (await call("GET", "/api/sessions?q=HELLO")).json();
    expect(byText.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([pausedId]);
    const byId = (await call("GET", "/api/sessions?q=hostile-ses")).json();
    expect(byId.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([hostileId]);
    expect((await call("GET", "/api/sessions?q=nothing-matches-this")).json().sessions).toEqual([]);
  });

  it("gives a session's timeline: its run, the model call with tokens, the call waiting for approval", async () => {
    const shown = await timeline(pausedId);
    expect(shown.status).toBe("paused");
    expect(shown.runs).toHaveLength(1);
    const [run] = shown.runs;
    expect(run).toMatchObject({ prompt: "write hello", status: "paused" });
    expect(run.pending).toEqual([
      expect.objectContaining({ id: "w1", name: "Write", reason: "approval" }),
    ]);
    const [turn] = run.turns;
    expect(turn.usage.outputTokens).toBeGreaterThanOrEqual(0);
    expect(turn.calls).toEqual([
      expect.objectContaining({
        id: "w1",
        name: "Write",
        status: "pending",
        input: { file_path: "hello.txt", content: "hi\n" },
        waiting: expect.objectContaining({ reason: "approval" }),
      }),
    ]);
  });

  it("keeps HTML in the store as data: the JSON carries it as a string, never rendered", async () => {
    const shown = await timeline(hostileId);
    expect(shown.runs[0].prompt).toBe(`look ${HOSTILE}`);
    expect(shown.runs[0].turns[0].calls[0].input.content).toBe(HOSTILE);
    const answer = await call("GET", `/api/sessions/${hostileId}`);
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
  });

  it("streams changes as server-sent events (with the token only)", async () => {
    expect((await call("GET", "/api/events", { token: null })).status).toBe(401);
    const first = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        new URL(`/api/events?session=${pausedId}&token=${token}`, base),
        (res) => {
          expect(res.headers["content-type"]).toMatch(/text\/event-stream/);
          res.setEncoding("utf8");
          res.once("data", (chunk: string) => {
            resolve(chunk);
            req.destroy();
          });
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(first).toContain("event: hello");
  });

  it("approves the paused run: it resumes here, the call runs, and the run finishes", async () => {
    const answer = await post(`/api/sessions/${pausedId}/approve`, { decisions: { w1: "allow" } });
    expect(answer.status, answer.body).toBe(202);
    // A second approval of the same pause is refused: it is no longer paused (or still running).
    const again = await post(`/api/sessions/${pausedId}/approve`, { decisions: { w1: "allow" } });
    expect(again.status).toBe(409);
    await expect
      .poll(async () => (await timeline(pausedId)).status, { timeout: LIVENESS_MS, interval: 100 })
      .toBe("idle");
    const shown = await timeline(pausedId);
    const run = shown.runs[0];
    expect(run.status).toBe("success");
    expect(run.result).toBe("Wrote it.");
    expect(run.turns[0].calls[0]).toMatchObject({ id: "w1", status: "done", files: ["hello.txt"] });
    expect(run.turns[0].calls[0].durationMs).toBeGreaterThanOrEqual(0);
    expect(run.files).toEqual(["hello.txt"]);
    expect(readFileSync(path.join(cwd, "hello.txt"), "utf8")).toBe("hi\n");
  });

  it("shows what a rewind would change, then rewinds the files to the checkpoint", async () => {
    const { runs } = await timeline(pausedId);
    const checkpointId = runs[0].checkpointId;
    expect((await call("GET", `/api/sessions/${pausedId}/rewind?checkpoint=nope`)).status).toBe(
      404,
    );
    const preview = (
      await call("GET", `/api/sessions/${pausedId}/rewind?checkpoint=${checkpointId}`)
    ).json();
    expect(preview.files).toEqual([
      expect.objectContaining({
        path: "hello.txt",
        change: "delete",
        diff: expect.stringContaining("-hi"),
      }),
    ]);
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(true);
    const rewound = await post(`/api/sessions/${pausedId}/rewind`, { checkpointId });
    expect(rewound.status, rewound.body).toBe(200);
    expect(rewound.json()).toEqual({ restored: [], deleted: ["hello.txt"] });
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(false);
    expect((await post(`/api/sessions/${pausedId}/rewind`, { checkpointId: 7 })).status).toBe(400);
  });

  it("forks a session at a checkpoint or whole; the copy is listed and the original unchanged", async () => {
    const whole = await post(`/api/sessions/${pausedId}/fork`, {});
    expect(whole.status, whole.body).toBe(201);
    const forkId = whole.json().sessionId;
    const copy = await timeline(forkId);
    expect(copy.origin).toEqual({ from: pausedId });
    expect(copy.runs).toHaveLength(1);
    const { runs } = await timeline(pausedId);
    const atStart = await post(`/api/sessions/${pausedId}/fork`, {
      checkpointId: runs[0].checkpointId,
    });
    expect(atStart.status).toBe(201);
    expect((await timeline(atStart.json().sessionId)).runs).toHaveLength(0);
    expect((await post(`/api/sessions/${pausedId}/fork`, { checkpointId: "nope" })).status).toBe(
      404,
    );
    const ids = (await call("GET", "/api/sessions"))
      .json()
      .sessions.map((s: { sessionId: string }) => s.sessionId);
    expect(ids).toContain(forkId);
  });

  it("denies a call from the page: the run goes on without it, and the model is told", async () => {
    const answer = await post("/api/sessions/deny-session/approve", { decisions: { d1: "deny" } });
    expect(answer.status, answer.body).toBe(202);
    await expect
      .poll(async () => (await timeline("deny-session")).status, {
        timeout: LIVENESS_MS,
        interval: 100,
      })
      .toBe("idle");
    const run = (await timeline("deny-session")).runs[0];
    expect(run).toMatchObject({ status: "success", result: "Not written." });
    expect(run.turns[0].calls[0]).toMatchObject({ id: "d1", status: "error" });
    expect(run.turns[0].calls[0].result).toMatch(/declined/);
    expect(existsSync(path.join(cwd, "denied.txt"))).toBe(false);
  });

  it("steers a run the inspector drives: the message reaches the model, the timeline shows it", async () => {
    const answer = await post("/api/sessions/steer-session/approve", {
      decisions: { s1: "allow" },
    });
    expect(answer.status, answer.body).toBe(202);
    await steerTurn.atTurn;
    const running = await timeline("steer-session");
    expect(running).toMatchObject({ status: "running", live: true });
    expect(running.runs[0].status).toBe("running");
    // A rewind or a second approval waits for the run to end.
    const checkpointId = running.runs[0].checkpointId;
    expect((await post("/api/sessions/steer-session/rewind", { checkpointId })).status).toBe(409);
    const steered = await post("/api/sessions/steer-session/steer", { text: "also say hi" });
    expect(steered.status, steered.body).toBe(202);
    steerTurn.release();
    await expect
      .poll(async () => (await timeline("steer-session")).status, {
        timeout: LIVENESS_MS,
        interval: 100,
      })
      .toBe("idle");
    const run = (await timeline("steer-session")).runs[0];
    expect(run.result).toBe("after steering");
    expect(run.turns.flatMap((turn: { userMessages: string[] }) => turn.userMessages)).toEqual([
      "also say hi",
    ]);
    const last = server.requests.at(-1)!.body.messages.at(-1);
    expect(JSON.stringify(last)).toContain("also say hi");
  });
});

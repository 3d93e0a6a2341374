// skein's own example: a conversation that continues across runs, kept in a SQLite file. A new
// agent on the same file (as a new process would be) picks the conversation up by its session id.
// It runs offline: a scripted model plays the model's side. Run it with
// `npx tsx examples/sessions-continue.ts`.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createBareAgent, loadSession } from "skein";
import { sqliteStore } from "skein/sqlite";
import { scriptedModel } from "skein/testing";

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), "skein-example-"));
  try {
    const file = path.join(dir, "sessions.db");
    // The scripted model answers from what it is sent: the earlier prompts, if it gets them.
    const model = scriptedModel((request) => {
      const prompts = request.messages.filter((message) => message.role === "user");
      return prompts.length === 1
        ? { text: "Nice to meet you, Ada." }
        : { text: `You told me: "${prompts[0]!.content}"` };
    });

    // Agents on a store that outlives the process share a secret that seals paused runs: in an
    // app, set SKEIN_APPROVAL_SECRET (or pass approvalSecret) the same in every process.
    const approvalSecret = process.env.SKEIN_APPROVAL_SECRET || randomBytes(32).toString("hex");

    // 1. A first run starts a new session; its id is on the result.
    const before = sqliteStore({ path: file });
    const first = await createBareAgent({ model, sessionStore: before, approvalSecret }).run(
      "My name is Ada.",
    );
    log(`run 1: ${first.result}`);
    await before.close();

    // 2. Later, another agent on the same file continues that session: the model is sent the
    // stored transcript followed by the new prompt.
    const store = sqliteStore({ path: file });
    const agent = createBareAgent({ model, sessionStore: store, approvalSecret });
    const second = await agent.run("What is my name?", { sessionId: first.sessionId });
    log(`run 2: ${second.result}`);
    log(`run 2 sent the model ${model.requests[1]!.messages.length} messages`);

    // 3. What the store holds: every message, and a checkpoint per prompt.
    const session = await loadSession(store, first.sessionId);
    log(
      `stored: ${session!.status}, ${session!.messages.length} messages, prompts: ${session!.checkpoints.map((c) => c.prompt).join(" | ")}`,
    );
    await store.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();

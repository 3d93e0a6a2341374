// skein's own example: a run that survives kill -9. A child process runs the agent on a SQLite
// store and is killed while a tool runs; this process then resumes the run from the store alone.
// The finished call is not run again; the call that was cut off is not idempotent, so the model is
// told its outcome is unknown instead of it being run twice. Offline (a scripted model). Run it
// with `npx tsx examples/sessions-crash-recovery.ts`.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createBareAgent, loadSession, type Model, tool } from "skein";
import { sqliteStore } from "skein/sqlite";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

/** The same agent in both processes: one idempotent tool, one that is not. */
function billingAgent(dir: string, model: Model) {
  const order = z.object({ order: z.number() });
  const fetchOrder = tool(
    "fetch_order",
    "Reads an order.",
    order,
    ({ order }) => `Order ${order}`,
    {
      idempotent: true, // safe to run again after a crash
    },
  );
  const sendInvoice = tool("send_invoice", "Emails the invoice.", order, async ({ order }) => {
    appendFileSync(path.join(dir, "outbox.txt"), `invoice for order ${order}\n`);
    console.log("sending"); // the parent kills this process now, mid-tool
    await new Promise((resolve) => setTimeout(resolve, 60_000));
    return "Sent.";
  });
  const store = sqliteStore({ path: path.join(dir, "sessions.db") });
  return {
    store,
    agent: createBareAgent({ model, tools: [fetchOrder, sendInvoice], sessionStore: store }),
  };
}

/** The child: starts the run, and is killed in the middle of send_invoice. */
async function child(dir: string): Promise<void> {
  const model = scriptedModel([
    {
      toolCalls: [
        { id: "call_1", name: "fetch_order", input: { order: 7 } },
        { id: "call_2", name: "send_invoice", input: { order: 7 } },
      ],
    },
  ]);
  await billingAgent(dir, model).agent.run("Invoice order 7.", { sessionId: "billing-7" });
}

export async function main(log: (line: string) => void = console.log): Promise<string[]> {
  const dir = await mkdtemp(path.join(tmpdir(), "skein-example-"));
  // Both processes seal paused runs with one secret: in production, set SKEIN_APPROVAL_SECRET
  // everywhere the agent runs; here the child inherits the one this process makes.
  process.env.SKEIN_APPROVAL_SECRET ||= randomBytes(32).toString("hex");
  try {
    // 1. Another process runs the agent; it is killed with SIGKILL while it sends the invoice.
    const loader = process.execArgv.some((arg) => arg.includes("tsx"))
      ? process.execArgv
      : ["--import", "tsx"];
    const script = fileURLToPath(import.meta.url);
    const worker = spawn(process.execPath, [...loader, script, "child", dir], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve, reject) => {
      worker.stdout.on("data", (data) => String(data).includes("sending") && resolve());
      worker.on("close", () => reject(new Error("the child ended before send_invoice ran")));
    });
    worker.kill("SIGKILL");
    await new Promise((resolve) => worker.on("close", resolve));
    log("child killed while send_invoice ran");

    // 2. This process resumes the session from the store: no state was kept anywhere else.
    const model = scriptedModel([{ text: "I will check the outbox before sending it again." }]);
    const { store, agent } = billingAgent(dir, model);
    log(`status before: ${(await loadSession(store, "billing-7"))!.status}`);
    const result = await agent.resume({ sessionId: "billing-7" });
    const calls = result.steps[0]!.toolCalls.map((call) => `${call.name}: ${call.result.content}`);
    for (const call of calls) log(call);
    log(`${result.subtype}: ${result.result}`);
    const outbox = readFileSync(path.join(dir, "outbox.txt"), "utf8");
    log(`invoices sent: ${outbox.split("\n").filter(Boolean).length}`);
    await store.close();
    return calls;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "child") await child(process.argv[3]!);
else if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();

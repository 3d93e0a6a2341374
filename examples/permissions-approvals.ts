// skein's own example (not from a seed): built-in tools in a workspace, permission rules, an
// approval handler, and a run that pauses for approval and resumes. It runs offline: a scripted
// model plays the model's side. Run it with `npx tsx examples/permissions-approvals.ts`.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createAgent, type PermissionResult } from "skein";
import { scriptedModel } from "skein/testing";

export async function main(log: (line: string) => void = console.log): Promise<string[]> {
  const workspace = await mkdtemp(path.join(tmpdir(), "skein-example-"));
  try {
    // 1. An approval handler decides what the rules send to "ask" (Write, Edit and Bash by default).
    const asked: string[] = [];
    const approval = (name: string, input: unknown): PermissionResult => {
      asked.push(name);
      const command = (input as { command?: string }).command;
      return command?.startsWith("git push")
        ? { behavior: "deny", message: "pushing is for humans" }
        : true;
    };
    const writer = createAgent({
      cwd: workspace,
      approval,
      permissions: { allow: ["Bash(ls:*)"], deny: ["Read(.env)"] },
      model: scriptedModel([
        {
          toolCalls: [
            { name: "Write", input: { file_path: "notes/todo.md", content: "- ship it\n" } },
            { name: "Bash", input: { command: "ls notes" } },
            { name: "Bash", input: { command: "git push origin main" } },
            { name: "Read", input: { file_path: ".env" } },
          ],
        },
        { text: "Wrote notes/todo.md." },
      ]),
    });
    const first = await writer.run("Write a todo list.");
    for (const call of first.steps[0]!.toolCalls)
      log(
        `${call.name}: ${call.isError ? "refused" : "ran"}: ${String(call.result.content).split("\n")[0]}`,
      );
    log(`asked about: ${asked.join(", ")}`);
    log(`file: ${JSON.stringify(await readFile(path.join(workspace, "notes/todo.md"), "utf8"))}`);

    // 2. Without a handler, a call that asks pauses the run; resume with the user's decision.
    const editor = createAgent({
      cwd: workspace,
      model: scriptedModel([
        { toolCalls: [{ name: "Read", input: { file_path: "notes/todo.md" } }] },
        {
          toolCalls: [
            {
              name: "Edit",
              input: {
                file_path: "notes/todo.md",
                old_string: "ship it",
                new_string: "ship it today",
              },
            },
          ],
        },
        { text: "Updated." },
      ]),
    });
    const paused = await editor.run("Make it more urgent.");
    log(
      `${paused.subtype}: ${paused.pending!.map((call) => `${call.name} (${call.approvalReason})`).join(", ")}`,
    );
    // The state is plain JSON: store it, show the pending call to a human, resume later.
    const state = JSON.parse(JSON.stringify(paused.state));
    const resumed = await editor.resume(state, { approvals: { [paused.pending![0]!.id]: true } });
    log(`${resumed.subtype}: ${resumed.result}`);
    log(`file: ${JSON.stringify(await readFile(path.join(workspace, "notes/todo.md"), "utf8"))}`);
    return asked;
  } finally {
    await rm(workspace, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();

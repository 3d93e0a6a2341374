// ajv is loaded by the first tool given JSON Schema, not by import("skein"): an agent whose tools
// all use Zod never pays for it (issue 10, import memory). Checked in a fresh process, whose
// module cache nothing else has filled.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CHILD = fileURLToPath(new URL("./children/lazy-ajv.ts", import.meta.url));

function runChild(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD], { cwd: ROOT, env });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => {
      stdout += text;
    });
    child.stderr.setEncoding("utf8").on("data", (text: string) => {
      stderr += text;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

test("import('skein') and a Zod-only agent load no ajv; the first JSON Schema tool does, and validates", async () => {
  const { code, stdout, stderr } = await runChild();
  expect(code, stderr).toBe(0);
  const report = JSON.parse(stdout.trim().split("\n").at(-1)!);
  expect(report).toMatchObject({
    afterImport: false,
    afterZodAgent: false,
    afterJsonSchemaTool: true,
    answer: {
      isError: true,
      details: { reason: "invalid_input", issues: [{ path: ["key"] }] },
    },
  });
}, 120_000);

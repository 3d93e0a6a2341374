// Progressive disclosure, measured on the wire: 50 skills grow the first request by their names and
// descriptions alone, whatever their bodies hold.
import { anthropic, createBareAgent } from "skein";
import { type MockServer, mockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { useTempDirs } from "../support/temp.ts";
import { skillMd, writeSkill } from "./helpers.ts";

const tempDir = useTempDirs("skein-skills-size-");
let server: MockServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The size of the first request's body an agent with these skills sends. */
async function firstRequestBytes(count: number): Promise<{ bytes: number; text: string }> {
  const base = await tempDir();
  for (let index = 0; index < count; index++) {
    const name = `skill-${String(index).padStart(2, "0")}`;
    // A long body, different for each skill: none of it may reach the first request.
    const body = `# ${name}\n\n${`BODY-${index} `.repeat(500)}\n`;
    writeSkill(base, name, skillMd(name, descriptionOf(index), body), {
      "scripts/run.sh": "echo hi\n",
    });
  }
  server = await mockServer({ script: [{ text: "ok" }] });
  const agent = createBareAgent({
    model: anthropic({ baseURL: server.url, apiKey: "test" }),
    cwd: base,
    skills: { paths: ["."] },
  });
  const result = await agent.run("hi");
  expect(result.subtype).toBe("success");
  const text = JSON.stringify(server.requests[0]!.body);
  await server.close();
  server = undefined;
  return { bytes: Buffer.byteLength(text), text };
}

const descriptionOf = (index: number) =>
  `Handles task family number ${index}, use it when the user asks about family ${index}.`;

/** One listing line as it travels in the JSON body (newline escaped). */
const lineBytes = (index: number) =>
  Buffer.byteLength(
    JSON.stringify(`\n- skill-${String(index).padStart(2, "0")}: ${descriptionOf(index)}`),
  ) - 2;

describe("the first request with 50 skills", () => {
  it("grows by each skill's listing line (name and description) and nothing else", async () => {
    const one = await firstRequestBytes(1);
    const fifty = await firstRequestBytes(50);
    let expected = 0;
    for (let index = 1; index < 50; index++) expected += lineBytes(index);
    expect(fifty.bytes - one.bytes).toBe(expected);
    expect(fifty.text).not.toContain("BODY-");
    expect(fifty.text).not.toContain("run.sh");
    for (let index = 0; index < 50; index++) expect(fifty.text).toContain(descriptionOf(index));
  });
});

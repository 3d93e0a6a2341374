/** skein's own permissions example (examples/permissions-approvals.ts) runs offline and says what happened. */
import { describe, expect, it } from "vitest";
import { main } from "../examples/permissions-approvals.ts";

describe("examples/permissions-approvals.ts", () => {
  it("writes with approval, refuses the push and the .env read, pauses for Edit and resumes", async () => {
    const lines: string[] = [];
    const asked = await main((line) => lines.push(line));
    expect(asked).toEqual(["Write", "Bash"]);
    expect(lines).toEqual([
      expect.stringMatching(/^Write: ran: /),
      expect.stringMatching(/^Bash: ran: todo\.md/),
      expect.stringMatching(/^Bash: refused: .*pushing is for humans/),
      expect.stringMatching(/^Read: refused: Permission denied.*Read\(\.env\)/),
      "asked about: Write, Bash",
      'file: "- ship it\\n"',
      expect.stringMatching(/^paused: Edit \(.+\)$/),
      "success: Updated.",
      'file: "- ship it today\\n"',
    ]);
  });
});

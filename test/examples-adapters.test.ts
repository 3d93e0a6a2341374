/** skein's own adapters example (examples/adapters.ts) runs offline and says what happened. */
import { describe, expect, it } from "vitest";
import { main } from "../examples/adapters.ts";

describe("examples/adapters.ts", () => {
  it("runs a Vercel ai tool (with progress) and an OpenAI Agents tool, inputs coerced", async () => {
    const lines: string[] = [];
    await main((line) => lines.push(line));
    expect(lines).toEqual([
      'forecast … {"status":"looking up Lisbon (toolu_1_1)"}',
      'forecast … {"city":"Lisbon","days":3,"outlook":"sunny, then rain"}',
      'forecast -> {"city":"Lisbon","days":3,"outlook":"sunny, then rain"}',
      "convert_temperature -> 21 °C is 69.8 °F",
      "success: Lisbon: sunny, then rain; 21 °C is 69.8 °F.",
    ]);
  });
});

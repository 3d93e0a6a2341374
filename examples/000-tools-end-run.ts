// Seeds 000 (zh) and 001 (en), "Tools" / "工具": "End the run from a tool" / "从工具里结束整个运行".
// The page's snippet relies on the imports of its first example; they are added here.
import { tool } from "skein";
import { z } from "zod/v4";

const finish = tool(
  "finish",
  "Submit the final answer and end the run",
  z.object({ answer: z.string() }),
  async ({ answer }) => ({ content: answer, endTurn: true }),
);

export { finish };

// Seeds 000 (zh) and 001 (en), "Tools" / "工具": "Validate a tool batch before execution" /
// "执行前检查整批工具". The code is 001's (000's differs only in the language of its messages).
// The page's snippet relies on the imports of its first example; they are added here.
// biome-ignore-all format: the seed's code is kept exactly as the page prints it.
import { createAgent, tool } from "skein";
import { z } from "zod/v4";

// App code the page leaves out.
const document = { revision: 1 };
const incrementRevision = tool(
  "incrementRevision",
  "Increment the document's revision",
  z.object({}),
  async () => `revision ${++document.revision}`,
);

const agent = createAgent({
  model: "claude-sonnet-4-6",
  tools: [incrementRevision],
  toolBatchPolicy: {
    validate({ toolCalls }) {
      const update = toolCalls.find(call => call.name === "incrementRevision");
      const handoff = toolCalls.find(
        call => call.kind === "agent_tool" &&
          (call.input as { mode?: string }).mode === "handoff",
      );
      if (update && handoff) {
        return {
          allowed: false,
          code: "invalid_tool_batch",
          message: "Update the revision before delegating dependent work.",
          conflictingToolCallIds: [update.id, handoff.id],
          suggestedNextStep: "Run the update first, then hand off the new revision.",
        };
      }
      return { allowed: true };
    },
  },
});

export { agent, document, incrementRevision };

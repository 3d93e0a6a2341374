// Seeds 000 (zh) and 001 (en), "Tools" / "工具": "Run independent tools concurrently" /
// "并发执行互不依赖的工具". The code is 001's (000's differs only in the comment's language).
// The page's snippet relies on the imports of its first example; they are added here.
import { createAgent, tool } from "skein";
import { z } from "zod/v4";

// App code the page leaves out.
const documentIndex = {
  async search(query: string): Promise<string> {
    return `No documents match "${query}".`;
  },
};

const search = tool(
  "search",
  "Search documents",
  z.object({ query: z.string() }),
  async ({ query }) => {
    // App code: replace with your database or search client.
    return { content: await documentIndex.search(query) };
  },
  { isConcurrencySafe: () => true },
);

const agent = createAgent({
  model: "claude-sonnet-4-6",
  tools: [search],
  toolConcurrency: {
    mode: "safe",
    maxConcurrency: 8,
  },
});

export { agent, documentIndex, search };

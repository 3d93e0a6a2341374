import { createServer } from "node:http";
import { createAgent, memoryStore, tool } from "skein";
import { chatHandler, toNodeHandler } from "skein/web";
import { z } from "zod";

const deploy = tool(
  "deploy",
  "Deploys a service",
  z.object({ service: z.string() }),
  async ({ service }) => `Deployed ${service}.`,
);

// Each chat id is a session of this store: history is read from here, never from the page.
const sessionStore = memoryStore();
const agent = createAgent({
  model: "claude-sonnet-4-6",
  tools: [deploy],
  permissions: { ask: ["deploy"] }, // the page answers these approvals
  sessionStore,
});

// POST /api/chat sends; GET /api/chat/<chatId>/stream resumes a dropped stream.
const handler = chatHandler({ agent, sessionStore });
export const server = createServer(toNodeHandler(handler));
server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1");

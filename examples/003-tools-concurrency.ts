// Seed 003 (zh), "工具" (tools): "并发运行互不依赖的工具" (run independent tools concurrently).
// The page's snippet has no imports; the ones it needs (and the app code's) are added here.
import { createAgent, defineTool } from "skein";

// App code the page leaves out.
const internalApi = {
  async get(path: string): Promise<unknown> {
    return { path, status: "ok" };
  },
};
const fetchDocs = defineTool({
  id: "fetch-docs",
  execute: (input: { topic: string }) => internalApi.get(`/docs/${input.topic}`),
});
const fetchStatus = defineTool({
  id: "fetch-status",
  execute: (input: { service: string }) => internalApi.get(`/status/${input.service}`),
});
const fetchIncidents = defineTool({
  id: "fetch-incidents",
  execute: (input: { service: string }) => internalApi.get(`/incidents/${input.service}`),
});

const agent = createAgent({
  id: "research-agent",
  toolExecution: {
    toolConcurrency: 3,
  },
  tools: [fetchDocs, fetchStatus, fetchIncidents],
});

export { agent, fetchDocs, fetchIncidents, fetchStatus, internalApi };

// Seed 003 (zh), "工具" (tools): "定义本地工具" (define a local tool).
// biome-ignore-all format: the seed's code is kept exactly as the page prints it.
import { defineTool } from "skein";

const fetchTicket = defineTool({
  id: "fetch-ticket",
  description: "Load one internal support ticket.",
  parameters: {
    type: "object",
    properties: {
      ticketId: { type: "string" },
    },
    required: ["ticketId"],
    additionalProperties: false,
  },
  timeoutMs: 3_000,
  async execute(input: { ticketId: string }, context) {
    const response = await fetch(
      `https://internal.example/tickets/${input.ticketId}`,
      { signal: context.signal },
    );

    return response.json();
  },
});

export { fetchTicket };

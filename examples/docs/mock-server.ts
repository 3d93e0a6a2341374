import { anthropic, createBareAgent } from "skein";
import { mockServer } from "skein/testing";

// The first request gets a 429 with retry-after; the retry gets the answer.
const server = await mockServer({
  script: [{ status: 429, headers: { "retry-after": "1" }, times: 1, text: "hi" }],
});
const agent = createBareAgent({ model: anthropic({ baseURL: server.url, apiKey: "test" }) });
for await (const event of agent.stream("hello")) {
  if (event.type === "retry") console.log("retry", event.attempt, "after", event.delayMs, "ms");
  if (event.type === "result") console.log(event.subtype, event.result); // success hi
}
console.log(server.requests.length, "requests"); // 2 requests
await server.close();

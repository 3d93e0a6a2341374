import { readFile } from "node:fs/promises";
import { createBareAgent } from "skein";

const agent = createBareAgent({
  model: "claude-sonnet-4-6",
  systemPrompt: "You review screenshots of web pages. Answer in one short paragraph.",
});

// A prompt is a string, or content blocks: text and images (base64, or { type: "url", url }).
const data = (await readFile("screenshot.png")).toString("base64");
const result = await agent.run([
  { type: "text", text: "What looks broken on this page?" },
  { type: "image", source: { type: "base64", media_type: "image/png", data } },
]);
console.log(result.result);

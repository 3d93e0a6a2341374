import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { createBareAgent } from "skein";
import { scriptedModel } from "skein/testing";

// Any OpenTelemetry tracer works (trace.getTracer("my-app") from @opentelemetry/api, with your
// exporter); here an in-memory one, to print what was recorded.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const agent = createBareAgent({
  id: "helper",
  model: scriptedModel([{ text: "Hi." }]),
  tracer: provider.getTracer("my-app"),
});
await agent.run("Say hi.");
for (const span of exporter.getFinishedSpans()) console.log(span.name); // chat scripted, invoke_agent helper

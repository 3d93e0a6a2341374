import { createBareAgent, type ToolContext, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";

/*
 * A handler's `ctx.signal` is made when the handler reads it (the batch's signal costs an
 * AbortSignal): it behaves as a plain property all the same.
 */

it("ctx.signal read late, or from a copy of the context, follows the run's abort", async () => {
  const started = deferred();
  let copied: AbortSignal | undefined;
  let late: AbortSignal | undefined;
  const wait = tool("wait", "Waits for the abort", z.object({}), async (_input, ctx) => {
    started.resolve();
    await new Promise((resolve) => setTimeout(resolve, 5));
    copied = { ...ctx }.signal;
    late = ctx.signal;
    return new Promise<string>((_, reject) =>
      late!.addEventListener("abort", () => reject(late!.reason), { once: true }),
    );
  });
  const controller = new AbortController();
  const model = scriptedModel([{ toolCalls: [{ id: "w", name: "wait", input: {} }] }]);
  const run = createBareAgent({ model, tools: [wait] }).run("go", { signal: controller.signal });
  await started.promise;
  await new Promise((resolve) => setTimeout(resolve, 20));
  controller.abort();
  const error = await run.catch((thrown: unknown) => thrown);
  expect((error as Error).name).toBe("AbortError");
  expect(copied).toBe(late);
  expect(late).toBeInstanceOf(AbortSignal);
  expect(late!.aborted).toBe(true);
});

it("ctx.signal can be replaced by the handler, and is listed with the context's keys", async () => {
  const own = new AbortController().signal;
  let seen: { keys: string[]; replaced: AbortSignal | undefined } | undefined;
  const swap = tool("swap", "Swaps its signal", z.object({}), async (_input, ctx: ToolContext) => {
    const keys = Object.keys(ctx);
    ctx.signal = own;
    seen = { keys, replaced: ctx.signal };
    return "ok";
  });
  const model = scriptedModel([
    { toolCalls: [{ id: "s", name: "swap", input: {} }] },
    { text: "done" },
  ]);
  const result = await createBareAgent({ model, tools: [swap] }).run("go");
  expect(result.result).toBe("done");
  expect(seen!.keys).toContain("signal");
  expect(seen!.replaced).toBe(own);
});

/**
 * HTTP (5): 200 concurrent three-turn runs (two tool turns and a final answer each) in one
 * process, over HTTP against the mock server on 127.0.0.1, skein against the plain fetch loop:
 * throughput, with the server in this process as in (4), in paired, interleaved batches, garbage
 * collected before each. W3 (w3.ts) runs the same workload in fresh child processes, where it
 * also measures memory.
 */
import { type Protocol, toolTurnsScript } from "./http-workload.ts";
import { checkSameRequests, runPlain } from "./plain-fetch.ts";
import { skeinSide } from "./skein-side.ts";
import { collectGarbage, median, paired, skein, spread, testing } from "./support.ts";

export const RUNS = 200;
export const TOOL_TURNS = 2;

export interface ConcurrentResult {
  protocol: Protocol;
  /** Runs per second, median over batches. */
  skeinRate: number;
  plainRate: number;
  /** Plain throughput / skein throughput, per pair of batches: median and half the IQR. */
  ratio: { median: number; noise: number };
  warning: string | undefined;
}

export async function httpConcurrent(
  protocol: Protocol,
  options: { repeats: number; warmup: number },
): Promise<ConcurrentResult> {
  const server = await testing.mockServer({ script: toolTurnsScript(TOOL_TURNS) });
  try {
    const side = skeinSide(skein);
    const warning = await checkSameRequests(server, protocol, side);
    const agent = side.agent(server.url, protocol);
    const batch = async (run: () => Promise<void>) => {
      server.requests.length = 0;
      collectGarbage();
      const start = performance.now();
      await Promise.all(Array.from({ length: RUNS }, run));
      return RUNS / ((performance.now() - start) / 1_000);
    };
    const sample = await paired(options.repeats, options.warmup, {
      skein: () => batch(() => side.run(agent)),
      baseline: () => batch(() => runPlain(server.url, protocol)),
    });
    return {
      protocol,
      skeinRate: median(sample.skein),
      plainRate: median(sample.baseline),
      ratio: spread(sample.baseline.map((rate, index) => rate / sample.skein[index]!)),
      warning,
    };
  } finally {
    await server.close();
  }
}

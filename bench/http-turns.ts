/**
 * HTTP (4): one run of 50 one-tool turns and a closing text turn, over HTTP against the mock
 * server on 127.0.0.1, on each protocol: wall time per turn, skein against the plain fetch loop.
 *
 * The server runs in this process, so a turn's time is the client's work, the server's (the same
 * for both: the requests are byte-identical) and the loopback round trip. Each repeat is one run
 * of each side, in alternating order; garbage is collected before each, outside the clock.
 */

import { type Protocol, toolTurnsScript } from "./http-workload.ts";
import { checkSameRequests, runPlain } from "./plain-fetch.ts";
import { skeinSide } from "./skein-side.ts";
import { collectGarbage, cpuNow, median, paired, skein, spread, testing } from "./support.ts";

const TOOL_TURNS = 50;
/** Model requests per run: the tool turns and the closing text turn. */
const REQUESTS = TOOL_TURNS + 1;

export interface TurnsResult {
  protocol: Protocol;
  /** Wall time per turn, median over repeats, ms. */
  skeinMs: number;
  plainMs: number;
  /** Median and half the interquartile range of the per-repeat ratios skein / plain. */
  ratio: { median: number; noise: number };
  /** The same ratio in the process's CPU time (client and server), as a cross-check. */
  cpuRatio: number;
  warning: string | undefined;
}

export async function httpTurns(
  protocol: Protocol,
  options: { repeats: number; warmup: number },
): Promise<TurnsResult> {
  const server = await testing.mockServer({ script: toolTurnsScript(TOOL_TURNS) });
  try {
    const side = skeinSide(skein);
    const warning = await checkSameRequests(server, protocol, side);
    const agent = side.agent(server.url, protocol);
    const timed = async (run: () => Promise<void>) => {
      server.requests.length = 0;
      collectGarbage();
      const cpu = cpuNow();
      const start = performance.now();
      await run();
      const wallMs = performance.now() - start;
      return { wallMs: wallMs / REQUESTS, cpuMs: (cpuNow() - cpu) / REQUESTS };
    };
    const sample = await paired(options.repeats, options.warmup, {
      skein: () => timed(() => side.run(agent)),
      baseline: () => timed(() => runPlain(server.url, protocol)),
    });
    const ratios = (key: "wallMs" | "cpuMs") =>
      sample.skein.map((timing, index) => timing[key] / sample.baseline[index]![key]);
    return {
      protocol,
      skeinMs: median(sample.skein.map((timing) => timing.wallMs)),
      plainMs: median(sample.baseline.map((timing) => timing.wallMs)),
      ratio: spread(ratios("wallMs")),
      cpuRatio: median(ratios("cpuMs")),
      warning,
    };
  } finally {
    await server.close();
  }
}

/**
 * The HTTP benchmarks, (4) and (5), as table rows: skein's providers against the plain fetch loop
 * of plain-fetch.ts, over HTTP against the mock server, on both protocols. Targets: skein within
 * 1.3 x of the plain loop in wall time per turn and in throughput. W5 (eager.ts): eager execution
 * against a plain loop that runs the tools after the stream ends. The memory of (5)'s workload is
 * W3's (w3.ts), measured in fresh processes.
 */
import { EAGER_NOTES, eagerRow, eagerWorkload } from "./eager.ts";
import { httpConcurrent, RUNS } from "./http-concurrent.ts";
import { httpTurns } from "./http-turns.ts";
import { HTTP_PROTOCOLS as PROTOCOLS, type Protocol } from "./http-workload.ts";
import { TABLE_HEADER, verdict } from "./support.ts";

const TARGET = 1.3;
/** The newer wires' target (issue 25): within 1.15 x of a plain fetch loop. */
const targetOf = (protocol: Protocol) =>
  protocol === "gemini" || protocol === "responses" ? 1.15 : TARGET;

const times = ({ median, noise }: { median: number; noise: number }) =>
  `${median.toFixed(2)} x ± ${noise.toFixed(2)}`;
const perSecond = (rate: number) => `${rate.toFixed(0)} runs/s`;

export async function httpBench(): Promise<{ rows: string[][]; notes: string }> {
  const rows = [TABLE_HEADER];
  const notes: string[] = [];
  for (const protocol of PROTOCOLS) {
    const turns = await httpTurns(protocol, { repeats: 31, warmup: 3 });
    rows.push([
      `(4) ${protocol}: 50 one-tool turns, wall per turn`,
      `${turns.skeinMs.toFixed(3)} ms`,
      `${turns.plainMs.toFixed(3)} ms`,
      times(turns.ratio),
      `<= ${targetOf(protocol)} x`,
      verdict(turns.ratio.median <= targetOf(protocol)),
    ]);
    notes.push(
      `(4) ${protocol}: CPU time per turn (client and server), skein / plain ${turns.cpuRatio.toFixed(2)} x.`,
    );
    if (turns.warning) notes.push(`WARNING ${turns.warning}`);
  }
  for (const protocol of PROTOCOLS) {
    const batch = await httpConcurrent(protocol, { repeats: 7, warmup: 1 });
    rows.push([
      `(5) ${protocol}: ${RUNS} concurrent 3-turn runs, throughput`,
      perSecond(batch.skeinRate),
      perSecond(batch.plainRate),
      `plain / skein ${times(batch.ratio)}`,
      `<= ${TARGET} x`,
      verdict(batch.ratio.median <= TARGET),
    ]);
    if (batch.warning) notes.push(`WARNING ${batch.warning}`);
  }
  const eager = await eagerWorkload();
  rows.push(eagerRow(eager));
  notes.push(...EAGER_NOTES(eager));
  notes.push(
    "± is half the interquartile range. The server runs in this process for (4) and the throughput of (5),",
    "so its work (the same for both: the request bodies are checked to be byte-identical) is in both figures.",
    "The memory of (5)'s workload, and its time with the server in another process, are W3's.",
  );
  return { rows, notes: notes.join("\n") };
}

/**
 * What a shell command printed, as the model will see it. A command can print without end, so
 * the output is held in bounded memory: a fixed head, a tail window (the end of a build log or a
 * test run matters most) and a count of what went by in between. Bytes from the pipes are
 * decoded as UTF-8 stream by stream, so a character split across two reads arrives whole, and no
 * cut of the buffer splits a UTF-16 surrogate pair (B4).
 */
import type { Readable } from "node:stream";
import { stringDecoder } from "../node-modules.ts";

/** Output kept for the model: the first HEAD and the last TAIL characters (the tail matters most). */
export const OUTPUT_HEAD_CHARS = 5_000;
export const OUTPUT_TAIL_CHARS = 25_000;

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/**
 * Output kept in bounded memory: a fixed head and a tail window, plus how much went by. Text
 * arrives already decoded, and no cut splits a UTF-16 surrogate pair (B4).
 */
export class OutputBuffer {
  private head = "";
  private headOpen = true;
  private tail: string[] = [];
  private tailLength = 0;
  private tailOffset = 0;
  /** Characters pushed so far. */
  total = 0;

  constructor(
    readonly headLimit = OUTPUT_HEAD_CHARS,
    readonly tailLimit = OUTPUT_TAIL_CHARS,
  ) {}

  push(text: string): void {
    if (!text) return;
    let rest = text;
    if (this.headOpen) {
      const room = this.headLimit - this.head.length;
      if (rest.length <= room) {
        this.head += rest;
        this.total += rest.length;
        return;
      }
      const cut = room > 0 && isHighSurrogate(rest.charCodeAt(room - 1)) ? room - 1 : room;
      this.head += rest.slice(0, cut);
      this.total += cut;
      this.headOpen = false;
      this.tailOffset = this.total;
      rest = rest.slice(cut);
    }
    this.tail.push(rest);
    this.tailLength += rest.length;
    this.total += rest.length;
    // Compacting at twice the window keeps memory bounded and the joins amortised.
    if (this.tailLength > 2 * this.tailLimit) this.trimTail();
  }

  /** True when characters were dropped between the head and the tail. */
  get truncated(): boolean {
    this.trimTail();
    return this.tailStart > this.head.length;
  }

  /** Head, a marker saying how much was left out, and the tail. */
  text(): string {
    return this.since(0);
  }

  /** What is still held from absolute offset `from` on, with a marker for what was dropped. */
  since(from: number): string {
    this.trimTail();
    let out = from < this.head.length ? this.head.slice(from) : "";
    const start = Math.max(from, this.head.length);
    const skipped = this.tailStart - start;
    if (skipped > 0) out += `\n\n[... ${skipped} characters of output omitted ...]\n\n`;
    const tail = this.tail.join("");
    return out + tail.slice(Math.max(0, start - this.tailStart));
  }

  private get tailStart(): number {
    return this.headOpen ? this.head.length : this.tailOffset;
  }

  private trimTail(): void {
    if (this.tailLength <= this.tailLimit) return;
    const joined = this.tail.join("");
    let drop = joined.length - this.tailLimit;
    if (isLowSurrogate(joined.charCodeAt(drop))) drop += 1;
    this.tail = [joined.slice(drop)];
    this.tailLength = joined.length - drop;
    this.tailOffset += drop;
  }
}

/** Decodes `stream` as UTF-8 into `output`; a character split across chunks is pushed whole. */
export function decodeInto(stream: Readable, output: OutputBuffer): void {
  const decoder = new (stringDecoder().StringDecoder)("utf8");
  stream.on("data", (chunk: Buffer) => output.push(decoder.write(chunk)));
  stream.on("end", () => output.push(decoder.end()));
}

/**
 * `text` without its trailing newlines. A loop: `/\n+$/` retries from every newline of a long
 * run that is not at the end, which is quadratic, and the output is the command's to shape.
 */
export function trimTrailingNewlines(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 10) end -= 1;
  return text.slice(0, end);
}

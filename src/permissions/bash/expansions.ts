/**
 * The `$` forms, backticks and double quotes of bash's word syntax, for the lexer. What a `${...}`
 * does is read closely enough to know when bash would evaluate a variable's text as code
 * (indirection, array subscripts and substring offsets are arithmetic, `@P` is a prompt), since
 * such a command could run any program.
 */
import { closingParen } from "./lexer.ts";
import { arithmeticEnd, LexError, type Part } from "./tokens.ts";

/** What the expansion readers need of the lexer. */
export interface Scanner {
  readonly src: string;
  readonly depth: number;
}

export interface Read {
  parts: Part[];
  /** Index just past what was read. */
  end: number;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
const SPECIAL = /^[@*#?$!0-9-]/;

/** Reads `"..."` from just past the opening quote: `$`, backticks and some escapes act inside. */
export function readDoubleQuoted(scanner: Scanner, at: number): Read {
  const read = readQuotedText(scanner, at, true);
  if (read.end < 0) throw new LexError("unparseable: unbalanced quote");
  return read;
}

/**
 * The expansions in `text` read as the inside of double quotes that never close (here-document
 * bodies, the words inside `${x:-...}`, arithmetic): for finding the substitutions they run.
 */
export function expansionsIn(text: string, depth: number): Part[] {
  return readQuotedText({ src: text, depth }, 0, false).parts;
}

function readQuotedText(scanner: Scanner, at: number, closing: boolean): Read {
  const src = scanner.src;
  const parts: Part[] = [];
  const text = (value: string, escaped?: true): void => {
    const last = parts.at(-1);
    if (last?.kind === "text" && !last.escaped && !escaped) last.text += value;
    else parts.push({ kind: "text", text: value, quoted: true, ...(escaped ? { escaped } : {}) });
  };
  let i = at;
  while (i < src.length) {
    const c = src[i]!;
    if (closing && c === '"') return { parts, end: i + 1 };
    if (c === "\\") {
      const next = src[i + 1];
      if (next === "\n") i += 2;
      else if (next !== undefined && '$`"\\'.includes(next)) {
        text(next, true);
        i += 2;
      } else {
        // Before any other character the backslash stays, but it is still an escape to note.
        text("\\", true);
        i++;
      }
      continue;
    }
    if (c === "$" || c === "`") {
      const read = readDollar(scanner, i, true);
      if (read) {
        parts.push(...read.parts);
        i = read.end;
        continue;
      }
    }
    text(c);
    i++;
  }
  return { parts, end: closing ? -1 : i };
}

/** Reads a `$` form or a backtick at `at`; undefined when the `$` is a plain character. */
export function readDollar(scanner: Scanner, at: number, inDouble: boolean): Read | undefined {
  const src = scanner.src;
  if (src[at] === "`") return backtick(scanner, at);
  const next = src[at + 1];
  if (next === "'" && !inDouble) return ansiC(src, at);
  if (next === '"' && !inDouble) {
    const read = readDoubleQuoted(scanner, at + 2);
    return { parts: [{ kind: "ansi", raw: '$"' }, ...read.parts], end: read.end };
  }
  if (next === "(") {
    if (src[at + 2] === "(") {
      const end = arithmeticEnd(src, at + 3);
      if (end >= 0) {
        const raw = src.slice(at, end + 2);
        return { parts: [{ kind: "arith", raw, body: src.slice(at + 3, end) }], end: end + 2 };
      }
    }
    const close = closingParen(src, at + 2, scanner.depth + 1);
    const raw = src.slice(at, close + 1);
    return { parts: [{ kind: "command", raw, body: src.slice(at + 2, close) }], end: close + 1 };
  }
  if (next === "[") {
    const close = matching(src, at + 2, "[", "]");
    const raw = src.slice(at, close + 1);
    return { parts: [{ kind: "arith", raw, body: src.slice(at + 2, close) }], end: close + 1 };
  }
  if (next === "{") {
    const close = braceEnd(scanner, at + 2);
    const raw = src.slice(at, close + 1);
    return {
      parts: [{ kind: "param", raw, ...parameter(src.slice(at + 2, close)) }],
      end: close + 1,
    };
  }
  const rest = src.slice(at + 1);
  const name = NAME.exec(rest)?.[0] ?? SPECIAL.exec(rest)?.[0];
  if (name === undefined) return undefined;
  const end = at + 1 + name.length;
  return { parts: [{ kind: "param", raw: src.slice(at, end), nested: [] }], end };
}

/** `$'...'`: backslash escapes inside, `\'` included. */
function ansiC(src: string, at: number): Read {
  for (let i = at + 2; i < src.length; i++) {
    if (src[i] === "\\") i++;
    else if (src[i] === "'")
      return { parts: [{ kind: "ansi", raw: src.slice(at, i + 1) }], end: i + 1 };
  }
  throw new LexError("unparseable: unbalanced quote");
}

/** Backticks: `\\`, `` \` `` and `\$` are unescaped in the body, which is then a command. */
function backtick(scanner: Scanner, at: number): Read {
  const src = scanner.src;
  let body = "";
  for (let i = at + 1; i < src.length; i++) {
    const c = src[i]!;
    if (c === "\\" && i + 1 < src.length) {
      const next = src[i + 1]!;
      body += "$`\\".includes(next) ? next : `\\${next}`;
      i++;
    } else if (c === "`") {
      return { parts: [{ kind: "command", raw: src.slice(at, i + 1), body }], end: i + 1 };
    } else body += c;
  }
  throw new LexError("unparseable: unclosed backtick");
}

/** Index of the `close` matching an `open` already read, counting nesting; throws if none. */
function matching(src: string, from: number, open: string, close: string): number {
  let depth = 0;
  for (let i = from; i < src.length; i++) {
    if (src[i] === open) depth++;
    else if (src[i] === close) {
      if (depth === 0) return i;
      depth--;
    }
  }
  throw new LexError(`unparseable: unclosed ${open}`);
}

/** Index of the `}` closing a `${`: quotes, substitutions and nested braces are skipped. */
function braceEnd(scanner: Scanner, from: number): number {
  const src = scanner.src;
  let depth = 0;
  let i = from;
  while (i < src.length) {
    const c = src[i]!;
    if (c === "\\") i += 2;
    else if (c === "'") {
      const close = src.indexOf("'", i + 1);
      if (close < 0) throw new LexError("unparseable: unbalanced quote");
      i = close + 1;
    } else if (c === '"') i = readDoubleQuoted(scanner, i + 1).end;
    else if (c === "$" || c === "`") i = readDollar(scanner, i, false)?.end ?? i + 1;
    else if (c === "{") {
      depth++;
      i++;
    } else if (c === "}") {
      if (depth === 0) return i;
      depth--;
      i++;
    } else i++;
  }
  throw new LexError("unparseable: unclosed ${");
}

/**
 * What `${inner}` does: the texts it expands (for substitutions) and whether bash could
 * evaluate a variable's value as code while expanding it.
 */
function parameter(inner: string): { risky?: string; nested: string[] } {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, not a template
  if (inner.startsWith("!")) return { risky: "indirect expansion ${!...}", nested: [inner] };
  const head = /^#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])/.exec(inner);
  if (!head) return { risky: "an unusual parameter expansion", nested: [inner] };
  let rest = inner.slice(head[0].length);
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    const subscript = close < 0 ? rest : rest.slice(1, close);
    if (close < 0 || !/^(?:@|\*|\d+)$/.test(subscript))
      return { risky: "an array subscript, evaluated as arithmetic", nested: [inner] };
    rest = rest.slice(close + 1);
  }
  if (rest === "") return { nested: [] };
  const operator = /^(?::?[-=?+]|##?|%%?|\/[/#%]?|\^\^?|,,?)/.exec(rest);
  if (operator) return { nested: [rest.slice(operator[0].length)] };
  if (rest.startsWith("@"))
    return rest === "@P" ? { risky: "prompt expansion @P", nested: [] } : { nested: [] };
  if (/^:[\s\d:+-]*$/.test(rest)) return { nested: [] };
  return { risky: "a substring offset, evaluated as arithmetic", nested: [rest] };
}

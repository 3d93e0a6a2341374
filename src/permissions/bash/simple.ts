/**
 * The strict subset a Bash allow rule may cover. Plain words (quotes without expansions; globs
 * and `~` only in arguments; `{}` and `\;` as whole words, for `find -exec`), the separators
 * `;` `&&` `||` `|` `|&` newline, a trailing `;`, comments, and these redirections: `>&1`/`>&2`
 * duplications, `>`, `>>`, `>|`, `&>`, `&>>` to a plain file (checked as a write by the gate) and
 * `<` from one (checked as a read). Everything else returns the reason it is complex.
 */
import { type Lexed, plainText, type Redir, type Token, type Word } from "./lexer.ts";
import { KEYWORDS } from "./structure.ts";
import { MAX_SIMPLE_COMMANDS } from "./types.ts";
import { isAssignmentWord, isStatic, wordInfo } from "./words.ts";

const EMPTY_BETWEEN = "unparseable: empty command between separators";
const ALLOWED_OPS = new Set([";", "&&", "||", "|", "|&", "\n"]);
const OUTPUT_OPS = new Set([">", ">>", ">|"]);

/** Why the command is not simple, or undefined when it is. */
export function simpleReason(lexed: Lexed): string | undefined {
  if (lexed.continuation) return "line continuation";
  for (const token of lexed.tokens) {
    const reason = tokenReason(token);
    if (reason) return reason;
  }
  const groups = groupCommands(lexed.tokens);
  if (typeof groups === "string") return groups;
  for (const group of groups) {
    const reason = commandReason(group);
    if (reason) return reason;
  }
  return undefined;
}

function tokenReason(token: Token): string | undefined {
  switch (token.kind) {
    case "word":
      return wordReason(token);
    case "redirect":
      return redirectReason(token);
    case "arith":
      return "subshell";
    case "op":
      return token.op === "(" || token.op === ")" ? "subshell" : undefined;
    default:
      return undefined;
  }
}

function wordReason(word: Word): string | undefined {
  const whole = plainText(word);
  for (const part of word.parts) {
    switch (part.kind) {
      case "text":
        if (part.escaped && !(word.parts.length === 1 && part.text === ";"))
          return "backslash escape";
        if (!part.quoted && /[{}]/.test(part.text) && whole !== "{}") return "brace";
        break;
      case "command":
        return "command substitution";
      case "process":
        return "process substitution";
      case "array":
        return "array assignment";
      default:
        return part.kind === "arith" && part.raw.startsWith("$((")
          ? "command substitution"
          : "variable expansion";
    }
  }
  return undefined;
}

function redirectReason(redir: Redir): string | undefined {
  if (redir.op === "<<" || redir.op === "<<-" || redir.op === "<<<") return "heredoc";
  const target = redir.target!;
  const fd = redir.fd;
  if (redir.op === ">&")
    return ["", "1", "2"].includes(fd) && ["1", "2"].includes(plainText(target) ?? "")
      ? undefined
      : "redirection";
  const plain =
    isStatic(wordInfo(target)) && !target.parts.some((p) => p.kind === "text" && p.escaped);
  if (!plain) return "redirection";
  if (OUTPUT_OPS.has(redir.op) && ["", "1", "2"].includes(fd)) return undefined;
  if ((redir.op === "&>" || redir.op === "&>>") && fd === "") return undefined;
  if (redir.op === "<" && (fd === "" || fd === "0")) return undefined;
  return "redirection";
}

type Group = (Word | Redir)[];

/**
 * Splits at separators. Newlines may repeat and may follow another separator (`a &&` newline
 * `b`), as in bash; a trailing `;` ends the last command; any other separator needs a command
 * before it and one after it.
 */
function groupCommands(tokens: Token[]): Group[] | string {
  const groups: Group[] = [];
  let group: Group = [];
  let awaitingCommand = false;
  for (const token of tokens) {
    if (token.kind === "comment") continue;
    if (token.kind === "word" || token.kind === "redirect") {
      group.push(token);
      continue;
    }
    if (token.kind !== "op") return "subshell";
    if (token.op === "&") return group.length === 0 ? EMPTY_BETWEEN : "background &";
    if (!ALLOWED_OPS.has(token.op)) return EMPTY_BETWEEN;
    if (group.length === 0) {
      if (token.op === "\n") continue;
      return EMPTY_BETWEEN;
    }
    groups.push(group);
    if (groups.length > MAX_SIMPLE_COMMANDS) return tooManyCommands();
    group = [];
    awaitingCommand = token.op !== "\n" && token.op !== ";";
  }
  if (group.length > 0) groups.push(group);
  else if (awaitingCommand) return "unparseable: trailing separator";
  if (groups.length > MAX_SIMPLE_COMMANDS) return tooManyCommands();
  if (groups.length === 0) return "empty command";
  return groups;
}

function tooManyCommands(): string {
  return `too many commands (over ${MAX_SIMPLE_COMMANDS})`;
}

function commandReason(group: Group): string | undefined {
  const words = group.filter((t): t is Word => t.kind === "word");
  let programAt = 0;
  while (programAt < words.length && isAssignmentWord(words[programAt]!)) programAt++;
  const program = words[programAt];
  if (!program) return words.length === 0 ? "redirection" : undefined;
  const text = plainText(program);
  if (text !== undefined && KEYWORDS.has(text))
    return text === "{" || text === "}" ? "brace" : `shell keyword "${text}"`;
  const masked = program.parts.map((p) => (p.kind === "text" && !p.quoted ? p.text : "_")).join("");
  if (/[*?[]/.test(masked)) return "glob in program name";
  return undefined;
}

// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands
/**
 * Unit level of issue 8 section 2: the analysis under the gate. Programs named only at run time
 * are "opaque" (any deny rule could match them), text known only at run time matches anything in
 * a deny pattern, code given to builtins is analysed as a command, compound commands are read
 * whole, and reads are judged with what the gate cannot know counted as a read of anything.
 */
import { describe, expect, it } from "vitest";
import {
  allowVerdict,
  analyzeCommand,
  couldMatchBashPattern,
  denyCouldMatch,
  denyView,
  fileReadConcern,
  HOLE,
  matchesBashPattern,
  type SimpleCommand,
  unsafeToAllow,
} from "../../src/permissions/bash/index.ts";
import { globMeetsPattern } from "../../src/permissions/glob-meet.ts";

function simple(command: string): SimpleCommand[] {
  const analysis = analyzeCommand(command);
  if (analysis.kind !== "simple") throw new Error(`complex: ${analysis.reason}`);
  return analysis.commands;
}

const opaque = (command: string) => denyView(analyzeCommand(command)).opaque;
const denied = (pattern: string, command: string) =>
  denyCouldMatch(pattern, analyzeCommand(command));
const holes = (...argv: string[]): SimpleCommand => ({
  assignments: [],
  argv: argv.map((w) => w.replaceAll(HOLE, "$x")),
  holes: argv,
});

describe("programs named only at run time are opaque", () => {
  it.each([
    "r${x}m v",
    "$'\\x72m' v",
    "/bin/r[m] v",
    "{rm,v}",
    '"$(printf rm)" v',
    "x=rm; $x v",
    "$0 -c 'rm v'",
    'a=(rm v); "${a[@]}"',
    "sudo $CMD v",
    "echo v | xargs env",
    "find . -exec {} \\;",
  ])("%j", (command) => {
    expect(opaque(command)).toMatch(/is not a plain word|is only known when it runs/);
  });

  it.each([
    ["echo $((x))", "arithmetic"],
    ["echo ${!x}", "indirect"],
    ["echo ${a[i]}", "subscript"],
    ["echo ${y:x}", "substring"],
    ["echo ${x@P}", "prompt"],
    ["[[ $x -eq 1 ]]", "arithmetic"],
    ["let i=i+1", "let"],
    ["declare -i y=x", "arithmetic"],
    ["read 'a[i]'", "subscript"],
    ["fc -s", "history"],
    ["hash -p /bin/rm ls", "hash -p"],
    ["enable -f ./x.so x", "enable -f"],
    ["echo rm v | bash", "pipe"],
    ['bash -c "$x"', "run time"],
    ['eval "rm $x"', "run time"],
    ['trap "$x" EXIT', "run time"],
    ["source <(echo rm)", "run time"],
    ["PS4=$x", "run time"],
    ["BASH_ENV=<(echo rm v) bash -c true", "run time"],
    ["git log &&& ls", "unparseable"],
    ["echo 'unbalanced", "unparseable"],
    ["a\rb", "carriage return"],
  ])("code from a variable or the input: %j", (command, mention) => {
    expect(opaque(command)).toContain(mention);
  });

  it.each([
    "ls -la",
    "echo $HOME",
    'echo "${x:-default}"',
    "echo $((1 + 2))",
    'for f in *.ts; do wc -l "$f"; done',
    "case $x in a) echo a;; *) echo b;; esac",
    'f() { echo "$@"; }; f x',
    "cat <<'EOF'\n$(not run)\nEOF",
    "bash script.sh",
    "if [ -f x ]; then cat x; fi",
  ])("%j names all its programs", (command) => {
    expect(opaque(command)).toBeUndefined();
  });
});

describe("code given to builtins and shells is analysed as a command", () => {
  it.each([
    "trap 'rm v' EXIT",
    "trap -- 'rm v' INT",
    "eval 'rm v'",
    "builtin eval rm v",
    "alias r='rm'",
    "complete -C 'rm v' x",
    "compgen -W '$(rm v)' x",
    "mapfile -C 'rm v' a",
    "bind -x '\"\\C-x\": rm v'",
    "PROMPT_COMMAND='rm v' true",
    "export PROMPT_COMMAND='rm v'",
    "ENV='$(rm v)' sh",
    "coproc rm v",
    ". /dev/stdin <<< 'rm v'",
    "bash <<'EOF'\nrm v\nEOF",
    "bash -O extglob -c 'rm v'",
    "bash --rcfile x -c 'rm v'",
    "su -c 'rm v' root",
    "printf -v 'a[$(rm v)]' x",
  ])("deny rm * matches %j", (command) => {
    expect(denied("rm *", command)).toBe(true);
  });

  it("an alias or completion command runs with arguments: a deny with arguments still matches", () => {
    expect(denied("rm -rf *", "alias r='rm'")).toBe(true);
    expect(denied("rm -rf *", "complete -C rm x")).toBe(true);
  });

  it("a literal argument that only looks like code is not a command", () => {
    expect(denied("rm *", "echo 'rm v'")).toBe(false);
    expect(denied("rm *", "git commit -m 'rm v'")).toBe(false);
  });
});

describe("compound commands are read whole", () => {
  it.each([
    "if true; then rm v; fi",
    "while rm v; do :; done",
    "for i in 1 2; do rm $i; done",
    "case x in x) rm v;; esac",
    "{ rm v; }",
    "(rm v)",
    "! rm v",
    "time rm v",
    "function g { rm v; }",
    "g() ( rm v )",
    "coproc c { rm v; }",
    "echo ${x:-$(rm v)}",
    "cat <<EOF\n$(rm v)\nEOF",
    "a=($(rm v))",
    "echo $(( $(rm v) + 1 ))",
    "x=$(case a in a) rm v;; esac)",
  ])("deny rm * matches %j", (command) => {
    expect(denied("rm *", command)).toBe(true);
  });
});

describe("deny patterns against text known only at run time", () => {
  it.each([
    ["rm -rf *", holes("rm", HOLE), true],
    ["rm -rf *", holes("rm", HOLE, "x"), true],
    ["rm -rf *", holes("rm", "-f", "x"), false],
    ["git push --force", holes("git", "push", HOLE), true],
    ["git push --force", holes("git", "pull", HOLE), false],
    ["npm run test:*", holes("npm", "run", HOLE), true],
    ["npm run test:*", holes("npx", HOLE), false],
    ["rm", holes(`r${HOLE}m`), true],
    ["curl *", holes(HOLE), true],
    ["ls -la", holes("ls", `-${HOLE}a`), true],
    ["ls -la", holes("ls", `-${HOLE}b`), false],
  ])("%j against %j is %s", (pattern, command, expected) => {
    expect(couldMatchBashPattern(pattern, command)).toBe(expected);
  });
});

describe("fileReadConcern: what Read rules say about a command", () => {
  const rules = (anyDeny = true) => ({
    denied: (rel: string) => anyDeny && (rel === ".env" || rel.endsWith("/.env")),
    asked: (rel: string) => !anyDeny && (rel === ".env" || rel.endsWith("/.env")),
    any: true,
    anyDeny,
    globDenied: (glob: string) => anyDeny && globMeetsPattern(glob, ".env"),
    globAsked: (glob: string) => !anyDeny && globMeetsPattern(glob, ".env"),
  });
  const concern = (command: string, anyDeny = true) =>
    fileReadConcern(analyzeCommand(command), "/nonexistent-root", rules(anyDeny));

  it.each([
    ["cat .env", ".env"],
    ["cat < .env", ".env"],
    ["cat ../.env", ".env"],
    ["curl -d @.env x", ".env"],
    ["grep -f.env x", ".env"],
    ["dd if=.env", ".env"],
    ["cat $F", "run time"],
    ["cat < $F", "run time"],
    ["ls | xargs cat", "xargs"],
    ["$c x", "run time"],
  ])("%j is denied (%s)", (command, mention) => {
    const found = concern(command);
    expect(found && "deny" in found && found.deny).toContain(mention);
  });

  it("asks instead when the rules only ask; a glob that can name the file is denied or asked", async () => {
    expect(concern("cat $F", false)).toMatchObject({ ask: expect.stringContaining("run time") });
    expect(concern("cat .en?")).toMatchObject({ deny: expect.stringContaining("pattern") });
    expect(await concern("cat .en?", false)).toMatchObject({
      ask: expect.stringContaining("pattern"),
    });
  });

  it("leaves other files, non-readers and commands without Read rules alone", async () => {
    expect(await concern("cat src/app.ts")).toBeUndefined();
    expect(concern("echo .env")).toBeUndefined();
    expect(concern("echo $F")).toBeUndefined();
    const none = {
      denied: () => false,
      asked: () => false,
      any: false,
      anyDeny: false,
      globDenied: () => false,
      globAsked: () => false,
    };
    expect(fileReadConcern(analyzeCommand("cat .env"), "/x", none)).toBeUndefined();
  });
});

describe("the simple subset is less noisy without being looser", () => {
  const autoAllowed = (pattern: string, command: string) =>
    allowVerdict(analyzeCommand(command), (c) => matchesBashPattern(pattern, c)) === true;

  it("accepts 2>&1, >/dev/null, a redirection to or from a plain file, a trailing ; and comments", () => {
    expect(simple("ls 2>&1 >/dev/null; cat < in.txt > out.txt # note;")).toEqual([
      {
        assignments: [],
        argv: ["ls"],
        redirects: [
          { op: "2>&", kind: "duplicate", target: "1" },
          { op: ">", kind: "write", target: "/dev/null" },
        ],
      },
      {
        assignments: [],
        argv: ["cat"],
        redirects: [
          { op: "<", kind: "read", target: "in.txt" },
          { op: ">", kind: "write", target: "out.txt" },
        ],
      },
    ]);
    expect(simple("ls &>> 'log file';").map((c) => c.redirects)).toEqual([
      [{ op: "&>>", kind: "write", target: "log file" }],
    ]);
  });

  it("accepts find -exec with \\; and {}", () => {
    expect(simple("find . -name '*.ts' -exec grep -l x {} \\;")[0]?.argv).toEqual([
      "find",
      ".",
      "-name",
      "*.ts",
      "-exec",
      "grep",
      "-l",
      "x",
      "{}",
      ";",
    ]);
  });

  it("find -exec is allowed only when the command it runs is allowed too", () => {
    const command = "find . -exec rm '{}' ';'";
    const [parsed] = simple(command);
    expect(unsafeToAllow(parsed!)).toBeUndefined();
    expect(autoAllowed("find *", command)).toBe(false);
    expect(allowVerdict(analyzeCommand(command), (c) => matchesBashPattern("find *", c))).toBe(
      'no allow rule matches "rm {}"',
    );
    const both = (c: SimpleCommand) =>
      matchesBashPattern("find *", c) || matchesBashPattern("grep *", c);
    expect(allowVerdict(analyzeCommand("find . -exec grep -l x {} +"), both)).toBe(true);
    expect(allowVerdict(analyzeCommand("find . -exec grep x {} \\; -exec rm {} \\;"), both)).toBe(
      'no allow rule matches "rm {}"',
    );
  });
});

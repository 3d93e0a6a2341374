import { describe, expect, it } from "vitest";
import {
  allowsAnything,
  allowVerdict,
  analyzeCommand,
  type CommandAnalysis,
  denyCouldMatch,
  denyForms,
  HOLE,
  matchesBashPattern,
  type SimpleCommand,
  unsafeToAllow,
} from "../../src/permissions/bash/index.ts";

const cmd = (...argv: string[]): SimpleCommand => ({ assignments: [], argv });

/** The gate's allow decision for one allow pattern. */
function autoAllowed(pattern: string, command: string): boolean {
  return allowVerdict(analyzeCommand(command), (c) => matchesBashPattern(pattern, c)) === true;
}

/** The gate's deny decision: through denyForms when simple, over-inclusive when complex. */
function denied(pattern: string, command: string): boolean {
  return denyCouldMatch(pattern, analyzeCommand(command), command);
}

function simple(command: string): SimpleCommand[] {
  const analysis = analyzeCommand(command);
  if (analysis.kind !== "simple") throw new Error(`complex: ${analysis.reason}`);
  return analysis.commands;
}

function reasonOf(command: string): string | undefined {
  const analysis = analyzeCommand(command);
  return analysis.kind === "complex" ? analysis.reason : undefined;
}

const argvs = (analysis: CommandAnalysis): string[][] =>
  (analysis.kind === "simple" ? analysis.commands : analysis.candidates).map((c) => c.argv);

describe("analyzeCommand: the simple subset", () => {
  it("splits plain words", () => {
    expect(analyzeCommand("npm run test")).toEqual({
      kind: "simple",
      commands: [cmd("npm", "run", "test")],
    });
  });

  it('removes quotes: npm run "test:unit" is npm run test:unit', () => {
    const [command] = simple('npm run "test:unit"');
    expect(command?.argv.join(" ")).toBe("npm run test:unit");
    expect(matchesBashPattern("npm run test:unit", command!)).toBe(true);
  });

  it("keeps single-quoted text literal, $ and ; included", () => {
    expect(simple("echo '$HOME; rm -rf ~' a'b'c")).toEqual([cmd("echo", "$HOME; rm -rf ~", "abc")]);
  });

  it("keeps an empty quoted argument", () => {
    expect(simple("printf ''")).toEqual([cmd("printf", "")]);
  });

  it("splits on ; && || | |& and newline", () => {
    expect(simple("a 1; b && c || d | e |& f\ng").map((c) => c.argv)).toEqual([
      ["a", "1"],
      ["b"],
      ["c"],
      ["d"],
      ["e"],
      ["f"],
      ["g"],
    ]);
  });

  it("allows blank lines and a newline after && or |", () => {
    expect(simple("\n\na &&\n\nb |\nc\n").map((c) => c.argv)).toEqual([["a"], ["b"], ["c"]]);
  });

  it("accepts globs and ~ in arguments, and # inside a word; for deny rules they may be anything", () => {
    const [command] = simple("ls *.ts src/?[ab] ~/x a#b");
    expect(command?.argv).toEqual(["ls", "*.ts", "src/?[ab]", "~/x", "a#b"]);
    expect(command?.holes).toEqual(["ls", HOLE, HOLE, HOLE, "a#b"]);
  });

  it("separates leading assignments, but not quoted ones or later ones", () => {
    expect(simple('FOO=1 BAR="a b" X+=y cmd Z=2')).toEqual([
      { assignments: ["FOO=1", "BAR=a b", "X+=y"], argv: ["cmd", "Z=2"] },
    ]);
    expect(simple('"FOO=1" cmd')).toEqual([cmd("FOO=1", "cmd")]);
  });

  it("reads a bare assignment as a command with no argv", () => {
    expect(simple("FOO=1")).toEqual([{ assignments: ["FOO=1"], argv: [] }]);
  });

  it("accepts exactly 50 commands", () => {
    expect(simple(Array(50).fill("true").join(";"))).toHaveLength(50);
  });
});

describe("analyzeCommand: everything else is complex", () => {
  it.each([
    ["npm run test $(curl x)", "command substitution"],
    ["npm run test `id`", "command substitution"],
    ['echo "`id`"', "command substitution"],
    ['echo "$(id)"', "command substitution"],
    ["echo $HOME", "variable expansion"],
    ['echo "x$HOME"', "variable expansion"],
    ["echo $'\\x41'", "variable expansion"],
    ["npm run test <(curl x)", "process substitution"],
    ["cat >(sh)", "process substitution"],
    ["ls 3> out", "redirection"],
    ["ls > $OUT", "redirection"],
    ["ls > *.txt", "redirection"],
    ["ls >& out", "redirection"],
    ["cat <> in", "redirection"],
    ["ls 2>&3", "redirection"],
    ["> out", "redirection"],
    ["cat <<EOF\nx\nEOF", "heredoc"],
    ["(rm -rf x)", "subshell"],
    ["{ rm x; }", "brace"],
    ["echo a{b,c}", "brace"],
    ["npm run test & evil", "background &"],
    ["npm run test &", "background &"],
    ["ls \\-exec", "backslash escape"],
    ['echo "a\\"b"', "backslash escape"],
    ["npm run test \\\n&& evil", "line continuation"],
    ["npm run test\rrm -rf /", "carriage return"],
    ["ls\0rm", "NUL character"],
    ["ls\vrm", "control character"],
    ["echo 'abc", "unparseable: unbalanced quote"],
    ['echo "abc', "unparseable: unbalanced quote"],
    ["git log &&& rm -rf /", "unparseable: empty command between separators"],
    ["a ;; b", "unparseable: empty command between separators"],
    ["; ls", "unparseable: empty command between separators"],
    ["ls\n; rm", "unparseable: empty command between separators"],
    ["ls &&", "unparseable: trailing separator"],
    ["ls; ;", "unparseable: empty command between separators"],
    ["", "empty command"],
    [" \t\n ", "empty command"],
    ["if true; then rm x; fi", 'shell keyword "if"'],
    ["! ls", 'shell keyword "!"'],
    ["[[ -f x ]]", 'shell keyword "[["'],
    ["[[ x =~ $(evil) ]]", "command substitution"],
    ["/usr/bin/r? x", "glob in program name"],
    ["[ -f x ]", "glob in program name"],
  ])("%j is complex: %s", (command, reason) => {
    expect(reasonOf(command)).toBe(reason);
  });

  it("gives every command as candidates, including the contents of substitutions", () => {
    expect(argvs(analyzeCommand("npm run test --x=$(rm -rf /) `id -u` <(curl x)"))).toEqual([
      ["npm", "run", "test", "--x=$(rm -rf /)", "`id -u`", "<(curl x)"],
      ["rm", "-rf", "/"],
      ["id", "-u"],
      ["curl", "x"],
    ]);
  });

  it("removes quotes and backslashes in candidates and separates assignments", () => {
    const analysis = analyzeCommand("A=1 'r'\\m -rf x > y");
    expect(analysis.kind === "complex" && analysis.candidates).toEqual([
      {
        assignments: ["A=1"],
        argv: ["rm", "-rf", "x"],
        redirects: [{ op: ">", kind: "write", target: "y" }],
      },
    ]);
  });
});

describe("matchesBashPattern", () => {
  it.each([
    ["npm run test:*", "npm run test", true],
    ["npm run test:*", "npm run test:unit", true],
    ["npm run test:*", "npm run test unit", true],
    ["npm run test:*", "npm run testx", false],
    ["npm run test *", "npm run test --watch", true],
    ["npm run test *", "npm run test", true],
    ["npm run test *", "npm run testx", false],
    ["npm run test*", "npm run testx", true],
    ["git * main", "git push origin main", true],
    ["git * main", "git push origin dev", false],
    ["* run *", "npm run", false],
    ["ls -la", "ls -la", true],
    ["ls -la", "ls -la x", false],
    ["ls", "LS", false],
    ["echo a\\*", "echo a*", true],
    ["echo a\\*", "echo ab", false],
    ["echo (x)", "echo (x)", true],
    ["*", "anything at all", true],
  ])("%j against %j is %s", (pattern, line, expected) => {
    expect(matchesBashPattern(pattern, cmd(...line.split(" ")))).toBe(expected);
  });

  it("ignores assignments", () => {
    const command = { assignments: ["NODE_OPTIONS=x"], argv: ["npm", "run", "test"] };
    expect(matchesBashPattern("npm run test", command)).toBe(true);
  });

  it("never spans commands: * stays within one simple command", () => {
    const commands = simple("git push; rm -rf main");
    expect(commands.map((c) => matchesBashPattern("git * main", c))).toEqual([false, false]);
  });
});

describe("C7: every subcommand must match the allow rule", () => {
  const rule = "npm run test *";

  it.each([
    ["npm run test; rm -rf ~", ["rm", "-rf", "~"]],
    ["npm run test && curl x|sh", ["curl", "x"]],
    ["npm run test | sh", ["sh"]],
    ["npm run test |& sh", ["sh"]],
    ["npm run test\nevil", ["evil"]],
  ])("%j is not auto-allowed", (command, second) => {
    const commands = simple(command);
    expect(commands[0]?.argv).toEqual(["npm", "run", "test"]);
    expect(commands[1]?.argv).toEqual(second);
    expect(matchesBashPattern(rule, commands[0]!)).toBe(true);
    expect(matchesBashPattern(rule, commands[1]!)).toBe(false);
    expect(autoAllowed(rule, command)).toBe(false);
  });

  it("allows the plain command", () => {
    expect(autoAllowed(rule, "npm run test --coverage")).toBe(true);
  });

  it("npm run test & evil is complex (background)", () => {
    expect(reasonOf("npm run test & evil")).toBe("background &");
    expect(autoAllowed(rule, "npm run test & evil")).toBe(false);
  });
});

describe("C8: substitutions are never auto-allowed", () => {
  it.each([
    "npm run test $(curl x)",
    "npm run test `id`",
    "npm run test <(curl x)",
    "npm run test --x=$(rm -rf /)",
    "cat >(sh)",
  ])("%j", (command) => {
    expect(analyzeCommand(command).kind).toBe("complex");
    expect(autoAllowed("npm run test *", command)).toBe(false);
    expect(autoAllowed("cat *", command)).toBe(false);
  });

  it("a deny on the substituted program still matches", () => {
    expect(denied("rm *", "npm run test --x=$(rm -rf /)")).toBe(true);
    expect(denied("curl *", "npm run test <(curl x)")).toBe(true);
    expect(denied("sh", "cat >(sh)")).toBe(true);
  });
});

describe("C9: parser differentials fail closed", () => {
  it("line continuation", () => {
    const command = "npm run test \\\n&& evil";
    expect(reasonOf(command)).toBe("line continuation");
    expect(denied("evil", command)).toBe(true);
  });

  it("heredoc with an embedded delimiter", () => {
    const command = "cat <<EOF\nx\nEOF rm -rf /\nEOF\nrm -rf ~";
    expect(reasonOf(command)).toBe("heredoc");
    expect(denied("rm *", command)).toBe(true);
  });

  it("CR as a separator", () => {
    const command = "npm run test\rrm -rf /";
    expect(reasonOf(command)).toBe("carriage return");
    expect(argvs(analyzeCommand(command))).toEqual([
      ["npm", "run", "test"],
      ["rm", "-rf", "/"],
    ]);
    expect(denied("rm *", command)).toBe(true);
  });

  it("backslash-escaped flag", () => {
    expect(reasonOf("ls \\-exec")).toBe("backslash escape");
    expect(autoAllowed("ls *", "ls \\-exec")).toBe(false);
  });

  it("zsh [[ x =~ $(evil) ]]", () => {
    expect(reasonOf("[[ x =~ $(evil) ]]")).toBe("command substitution");
    expect(denied("evil", "[[ x =~ $(evil) ]]")).toBe(true);
  });

  it("git log &&& rm -rf /", () => {
    const command = "git log &&& rm -rf /";
    expect(reasonOf(command)).toBe("unparseable: empty command between separators");
    expect(denied("rm *", command)).toBe(true);
    expect(autoAllowed("git log *", command)).toBe(false);
  });

  it("60 chained no-ops plus curl", () => {
    const command = `${"true; ".repeat(60)}curl x`;
    expect(reasonOf(command)).toBe("too many commands (over 50)");
    expect(denied("curl *", command)).toBe(true);
    expect(autoAllowed("*", command)).toBe(false);
  });

  it("a word hidden by quoting still triggers the deny", () => {
    expect(denied("rm *", "echo hi > /dev/null; 'r'm -rf x")).toBe(true);
    expect(denied("rm *", "x=$(/bin/r\\m -rf /)")).toBe(true);
  });

  it("a word that is only an argument is no program; what cannot be parsed could be any", () => {
    const command = "echo rm";
    expect(denyCouldMatch("rm *", analyzeCommand(command), command)).toBe(false);
    expect(denied("rm *", "echo rm > out")).toBe(false);
    expect(denied("git push *", "git log &&& ls")).toBe(true);
    expect(denied("curl *", "ls > out")).toBe(false);
  });
});

describe("C10: wrappers", () => {
  it("denyForms strips timeout and its duration", () => {
    expect(denyForms(cmd("timeout", "5", "rm", "-rf", "x"))).toEqual([
      cmd("timeout", "5", "rm", "-rf", "x"),
      cmd("rm", "-rf", "x"),
    ]);
  });

  it("denyForms strips wrappers repeatedly, with their options, and the path", () => {
    const command = {
      assignments: ["A=1"],
      argv: ["sudo", "-u", "root", "env", "-i", "FOO=1", "nice", "-n", "5", "/bin/rm", "x"],
    };
    expect(denyForms(command)).toEqual([
      command,
      cmd("sudo", "-u", "root", "env", "-i", "FOO=1", "nice", "-n", "5", "/bin/rm", "x"),
      cmd("env", "-i", "FOO=1", "nice", "-n", "5", "/bin/rm", "x"),
      cmd("nice", "-n", "5", "/bin/rm", "x"),
      cmd("/bin/rm", "x"),
      cmd("rm", "x"),
    ]);
  });

  it("reduces ./rm to rm too", () => {
    expect(denyForms(cmd("./rm", "x"))).toEqual([cmd("./rm", "x"), cmd("rm", "x")]);
  });

  it("returns just the original when there is nothing to strip", () => {
    expect(denyForms(cmd("ls", "-la"))).toEqual([cmd("ls", "-la")]);
  });

  it.each([
    "timeout 5 rm -rf x",
    "timeout -s KILL 5 rm x",
    "nice rm x",
    "nice -n 10 rm x",
    "env rm x",
    "env -u HOME FOO=1 rm x",
    "env -S 'rm -rf x'",
    "env '-Srm -rf x'",
    "sudo rm x",
    "sudo -u root rm x",
    "xargs rm",
    "xargs -0 -n 1 rm",
    "watch rm x",
    "watch -n 1 rm x",
    "nohup rm x",
    "time rm x",
    "stdbuf -oL rm x",
    "ionice -c 3 rm x",
    "command rm x",
    "exec rm x",
    "doas rm x",
    "chroot /srv rm x",
    "/usr/bin/rm x",
    "bash -c 'rm -rf /'",
    "sh -c 'cd /tmp && rm -rf x'",
    "eval rm x",
    "find . -exec rm '{}' ';'",
    "find -exec rm {} \\;",
  ])("deny rm * matches %j", (command) => {
    expect(denied("rm *", command)).toBe(true);
  });

  it("does not over-match unrelated simple commands", () => {
    expect(denied("rm *", "ls -la")).toBe(false);
    expect(denied("rm *", "npm run test")).toBe(false);
  });

  it.each([
    ["find . -delete", "find -delete"],
    ["find . -name x -fprint out", "find -fprint"],
    ["find . -exec rm '{}'", 'find -exec without ";" or "+"'],
    ["find . -exec {} ';'", "find -exec runs the files it finds"],
  ])("allow find * does not cover %j", (command, reason) => {
    const [parsed] = simple(command);
    expect(matchesBashPattern("find *", parsed!)).toBe(true);
    expect(unsafeToAllow(parsed!)).toBe(reason);
    expect(autoAllowed("find *", command)).toBe(false);
  });

  it("allow find * still covers a harmless find", () => {
    expect(autoAllowed("find *", "find . -name '*.ts'")).toBe(true);
  });

  it("npx rimraf: Bash(npx *) is flagged as allow-anything", () => {
    expect(allowsAnything("npx *")).toBe(true);
    expect(allowsAnything("Bash(npx *)")).toBe(true);
  });

  it.each([
    ["timeout 5 rm x", "timeout runs another command"],
    ["/usr/bin/sudo ls", "sudo runs another command"],
    ["xargs ls", "xargs runs another command"],
    ["bash -c ls", "bash runs code given as an argument"],
    ["eval ls", "eval runs code given as an argument"],
    [". ./env.sh", ". runs code given as an argument"],
    ["source ./env.sh", "source runs code given as an argument"],
    ["alias ls=rm", "alias changes later commands"],
    ["hash -p /tmp/evil ls", "hash changes later commands"],
  ])("unsafeToAllow(%j) is %j", (command, reason) => {
    expect(unsafeToAllow(simple(command)[0]!)).toBe(reason);
  });

  it("unsafeToAllow is undefined for ordinary commands", () => {
    expect(unsafeToAllow(cmd("npm", "run", "test"))).toBeUndefined();
    expect(unsafeToAllow(cmd("ls", "-la"))).toBeUndefined();
  });
});

describe("C11: environment tricks", () => {
  it("PATH=/opt/evil:$PATH npm run test is complex", () => {
    expect(reasonOf("PATH=/opt/evil:$PATH npm run test")).toBe("variable expansion");
    expect(autoAllowed("npm run test *", "PATH=/opt/evil:$PATH npm run test")).toBe(false);
  });

  it("NODE_OPTIONS=... npm run test matches the rule but is unsafe to allow", () => {
    const [command] = simple("NODE_OPTIONS=--require=/opt/x.js npm run test");
    expect(command).toEqual({
      assignments: ["NODE_OPTIONS=--require=/opt/x.js"],
      argv: ["npm", "run", "test"],
    });
    expect(matchesBashPattern("npm run test *", command!)).toBe(true);
    expect(unsafeToAllow(command!)).toBe("environment assignment NODE_OPTIONS");
    expect(autoAllowed("npm run test *", "NODE_OPTIONS=--require=/opt/x.js npm run test")).toBe(
      false,
    );
  });

  it("export FOO=$(curl x) before an allowed command is complex", () => {
    expect(reasonOf("export FOO=$(curl x); npm run test")).toBe("command substitution");
    expect(denied("curl *", "export FOO=$(curl x); npm run test")).toBe(true);
  });

  it("export without substitution is simple but unsafe to allow", () => {
    const commands = simple("export NODE_OPTIONS=--require=/x.js; npm run test");
    expect(unsafeToAllow(commands[0]!)).toBe("export changes later commands");
    expect(autoAllowed("npm run test *", "export NODE_OPTIONS=x; npm run test")).toBe(false);
  });

  it("LD_PRELOAD=... is unsafe to allow", () => {
    expect(unsafeToAllow(simple("LD_PRELOAD=/tmp/x.so ls")[0]!)).toBe(
      "environment assignment LD_PRELOAD",
    );
  });

  it("an assignment-only command is unsafe to allow", () => {
    expect(unsafeToAllow(simple("PATH=/opt/evil")[0]!)).toBe("assignment only");
  });

  it("deny still matches with assignments in front", () => {
    expect(denied("rm *", "FOO=1 rm -rf x")).toBe(true);
  });
});

describe("allowsAnything", () => {
  it.each([
    "npx *",
    "Bash(npx *)",
    "bash:*",
    "sh *",
    "*",
    "",
    "node *",
    "python *",
    "python3.12 *",
    "python -c *",
    "env *",
    "xargs *",
    "sudo:*",
    "npm exec *",
    "* --version",
    "/usr/bin/env *",
  ])("%j allows anything", (pattern) => {
    expect(allowsAnything(pattern)).toBe(true);
  });

  it.each([
    "npm run test *",
    "npm run test:*",
    "git *",
    "find *",
    "python scripts/build.py *",
    "npm exec",
    "node --version",
    "ls -la",
  ])("%j does not", (pattern) => {
    expect(allowsAnything(pattern)).toBe(false);
  });
});

describe("builtins that assign variables change later commands", () => {
  it.each([
    ["printf -v PATH tools", "printf -v changes later commands"],
    ["printf -vPATH tools", "printf -v changes later commands"],
    ["getopts ab PATH", "getopts changes later commands"],
    ["read PATH", "read changes later commands"],
    ["read -r line", "read changes later commands"],
    ["wait -p PATH", "wait -p changes later commands"],
    ["wait -np PATH", "wait -p changes later commands"],
    ["mapfile -t PATH", "mapfile runs code given as an argument"],
    ["readarray PATH", "readarray runs code given as an argument"],
    ["unset PATH", "unset changes later commands"],
    ["set -k", "set changes later commands"],
    ["compgen -C ls x", "compgen runs code given as an argument"],
  ])("unsafeToAllow(%j) is %j", (command, reason) => {
    expect(unsafeToAllow(simple(command)[0]!)).toBe(reason);
  });

  it("printf -v PATH tools && git status is not auto-allowed by printf:* and git status", () => {
    const command = "printf -v PATH tools && git status";
    const [printf, git] = simple(command);
    expect(matchesBashPattern("printf:*", printf!)).toBe(true);
    expect(matchesBashPattern("git status", git!)).toBe(true);
    expect(autoAllowed("printf:*", "printf -v PATH tools")).toBe(false);
  });

  it.each(["printf '%s\\n' -v x", "printf -- -v", "printf hello", "wait", "wait -n", "wait 12"])(
    "%j stays allowable",
    (command) => {
      expect(unsafeToAllow(simple(command)[0]!)).toBeUndefined();
    },
  );

  it.each([
    "printf -v 'a[$(rm -rf x)]' y",
    "read 'a[$(rm -rf x)]'",
    "declare 'a[`rm -rf x`]=1'",
    "test -v 'a[$(rm -rf x)]'",
  ])("a deny still matches the substitution in an array subscript: %j", (command) => {
    expect(analyzeCommand(command).kind).toBe("simple");
    expect(denied("rm *", command)).toBe(true);
  });

  it("quoted substitutions in other programs' arguments are left alone", () => {
    expect(denied("rm *", "git commit -m 'fix $(rm x) docs'")).toBe(false);
  });
});

describe("more wrappers are stripped for deny matching and never auto-allowed", () => {
  it.each([
    "flock /tmp/l rm x",
    "flock -w 5 /tmp/l rm x",
    "flock -xn /tmp/l rm x",
    "flock /tmp/l -c 'rm x'",
    "flock --command='rm x' /tmp/l",
    "taskset -c 0 rm x",
    "taskset 0x3 rm x",
    "unshare rm x",
    "unshare -r --propagation private rm x",
    "unshare --map-user=0 -w /tmp rm x",
    "strace rm x",
    "strace -f -e trace=file -o log rm x",
    "strace -ff -s 80 rm x",
    "ltrace -o log rm x",
    "script -c 'rm x'",
    "script -q -c 'rm x' /dev/null",
    "script -qc 'rm x' /dev/null",
    "script out.log -c 'rm x'",
    "script --command='rm x'",
    "script -c 'ls;rm x'",
    "busybox rm x",
    "toybox rm x",
    "/bin/busybox rm x",
    "nsenter -t 1 -m rm x",
    "firejail --net=none rm x",
    "chrt -f 10 rm x",
    "chrt --sched-runtime 5 -d 0 rm x",
    "numactl --interleave all rm x",
    "numactl -C 0-3 rm x",
    "catchsegv rm x",
    "valgrind --tool=memcheck rm x",
    "setpriv --reuid 1000 rm x",
    "prlimit --nofile=64 rm x",
    "fakeroot -- rm x",
    "eatmydata rm x",
    "faketime '2020-01-01' rm x",
    "systemd-run --user --unit x rm x",
    "runuser -u root -- rm x",
    "runuser root -c 'rm x'",
    "sg staff 'rm x'",
    "sg staff -c 'rm x'",
    "env -S 'rm -rf' x",
    "env -iS'rm x'",
    "env --split-string='rm x'",
    "timeout 5 flock /tmp/l taskset 1 busybox rm x",
    "xargs script -c 'rm x'",
    "caffeinate -t 5 rm x",
  ])("deny rm * matches %j", (command) => {
    expect(denied("rm *", command)).toBe(true);
  });

  it.each([
    "flock /tmp/l rm x",
    "taskset -c 0 rm x",
    "unshare -r rm x",
    "strace ls",
    "ltrace ls",
    "script -c ls",
    "busybox ls",
    "nsenter -t 1 ls",
    "firejail ls",
    "chrt 0 ls",
    "numactl -C 0 ls",
    "catchsegv ls",
    "valgrind ls",
  ])("%j is unsafe to allow", (command) => {
    const [parsed] = simple(command);
    expect(unsafeToAllow(parsed!)).toBe(`${basename(parsed!.argv[0]!)} runs another command`);
  });

  it("keeps the value of a wrapper's option out of the program position", () => {
    expect(denyForms(cmd("strace", "-o", "rm", "ls"))).toEqual([
      cmd("strace", "-o", "rm", "ls"),
      cmd("ls"),
    ]);
    expect(denied("rm *", "strace -o rm ls")).toBe(false);
    expect(denied("rm *", "taskset -c 0 ls rm")).toBe(false);
    expect(denied("rm *", "script rm.log")).toBe(false);
  });

  it("unwraps env -u before the command, not a cluster letter as -S", () => {
    expect(denied("rm *", "env -uSOME rm x")).toBe(true);
  });

  it("flags the new wrappers as allow-anything patterns", () => {
    expect(allowsAnything("flock *")).toBe(true);
    expect(allowsAnything("Bash(busybox:*)")).toBe(true);
  });
});

function basename(program: string): string {
  return program.slice(program.lastIndexOf("/") + 1);
}

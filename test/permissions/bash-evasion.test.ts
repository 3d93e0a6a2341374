// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands
/**
 * Issue 8 section 2: Bash deny and ask rules cannot be dodged by shell syntax. A program word that
 * is not a plain word could be any program: under a deny rule it is denied, under an ask rule it
 * asks, and it is never auto-allowed. Builtins that run text as code (trap, eval, alias, ...)
 * have that text analysed as a command. Each form below removed (or created) its file on the
 * code before this change, with `allow: ["Bash"]` and the deny (or ask) rule in place.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { exists, failing, runBash, workspaces } from "./bash-support.ts";

const workspace = workspaces();

/** Each runs `rm <file>` in bash (checked against bash itself when this test was written). */
const RM_FORMS: ((file: string) => string)[] = [
  (f) => `r\${x}m ${f}`,
  (f) => `$'\\x72m' ${f}`,
  (f) => `/bin/r[m] ${f}`,
  (f) => `{rm,${f}}`,
  (f) => `trap 'rm ${f}' EXIT`,
  (f) => `"$(printf rm)" ${f}`,
  (f) => `\\rm ${f}`,
  (f) => `r\\m ${f}`,
  (f) => `command rm ${f}`,
  (f) => `builtin eval 'rm ${f}'`,
  (f) => `exec rm ${f}`,
  (f) => `$0 -c 'rm ${f}'`,
  (f) => `shopt -s expand_aliases; alias r='rm'; eval 'r ${f}'`,
  (f) => `. /dev/stdin <<< 'rm ${f}'`,
  (f) => `bash <<'EOF'\nrm ${f}\nEOF`,
  (f) => `echo 'rm ${f}' | bash`,
  (f) => `x='a[$(rm ${f})]'; echo $((x))`,
  (f) => `x='b[$(rm ${f})]'; echo \${!x}`,
  (f) => `IFS=,; c=rm,${f}; $c`,
  (f) => `eval "$(printf 'rm ${f}')"`,
  (f) => `PS4='$(rm ${f})'; set -x; true`,
  (f) => `BASH_ENV=<(echo rm ${f}) bash -c true`,
  (f) => `x='a[$(rm ${f})]'; declare -i y=x`,
  (f) => `a=(rm ${f}); "\${a[@]}"`,
  (f) => `compgen -C 'rm ${f}' x`,
  (f) => `mapfile -C 'rm ${f}' -c 1 arr <<< a`,
  (f) => `coproc rm ${f}; wait`,
  (f) => `hash -p /bin/rm ls; ls ${f}`,
  (f) => `source <(echo rm ${f})`,
  (f) => `x='a[$(rm ${f})]'; y=abc; echo \${y:x}`,
  (f) => `x='a[$(rm ${f})]'; [[ $x -eq 0 ]]`,
  (f) => `let "x=a[$(rm ${f})]"`,
  (f) => `echo 'rm ${f}' | xargs -I{} sh -c '{}'`,
  (f) => `printf '%s' ${f} | xargs env rm`,
  (f) => `f() { rm "$@"; }; f ${f}`,
  (f) => `case x in x) rm ${f};; esac`,
  (f) => `x=rm; $x ${f}`,
];

/** Each runs `touch <file>` in bash. */
const TOUCH_FORMS: ((file: string) => string)[] = [
  (f) => `t\${x}ouch ${f}`,
  (f) => `$'\\x74ouch' ${f}`,
  (f) => `/usr/bin/tou[c]h ${f}`,
  (f) => `{touch,${f}}`,
  (f) => `trap 'touch ${f}' EXIT`,
  (f) => `"$(printf touch)" ${f}`,
  (f) => `\\touch ${f}`,
  (f) => `eval "touch ${f}"`,
  (f) => `. /dev/stdin <<< 'touch ${f}'`,
  (f) => `echo 'touch ${f}' | sh`,
  (f) => `x='a[$(touch ${f})]'; echo $((x))`,
  (f) => `c=touch; $c ${f}`,
  (f) => `exec touch ${f}`,
];

describe("control: each form really runs its program in bash", () => {
  it("with Bash allowed and no other rule, every rm form removes its file", async () => {
    const ws = await workspace();
    const files = RM_FORMS.map((_, i) => `victim${i}`);
    for (const file of files) await writeFile(path.join(ws, file), "keep\n");
    await runBash(
      ws,
      { allow: ["Bash"] },
      RM_FORMS.map((form, i) => form(files[i]!)),
    );
    expect(files.filter((file) => exists(ws, file))).toEqual([]);
  });

  it("with Bash allowed and no other rule, every touch form creates its file", async () => {
    const ws = await workspace();
    const files = TOUCH_FORMS.map((_, i) => `made${i}`);
    await runBash(
      ws,
      { allow: ["Bash"] },
      TOUCH_FORMS.map((form, i) => form(files[i]!)),
    );
    expect(files.filter((file) => !exists(ws, file))).toEqual([]);
  });
});

describe("allow Bash, deny Bash(rm *): a program named only at run time is denied", () => {
  it("every form is denied without a question, and nothing is removed", async () => {
    const ws = await workspace();
    const files = RM_FORMS.map((_, i) => `victim${i}`);
    for (const file of files) await writeFile(path.join(ws, file), "keep\n");
    // The approval handler says yes: an ask would run the command and remove the file.
    const commands = RM_FORMS.map((form, i) => form(files[i]!));
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Bash(rm *)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.asked).toEqual([]);
    expect(files.filter((file) => !exists(ws, file))).toEqual([]);
  });

  it("says why a command with an unnamed program is denied", async () => {
    const ws = await workspace();
    await writeFile(path.join(ws, "victim"), "keep\n");
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Bash(rm *)"] }, ["r${x}m victim"]);
    expect(run.text("c0")).toMatch(/Bash\(rm \*\)/);
    expect(run.text("c0")).toMatch(/r\$\{x\}m/);
    expect(exists(ws, "victim")).toBe(true);
  });

  it("a deny rule with literal arguments matches text known only at run time", async () => {
    const ws = await workspace();
    await writeFile(path.join(ws, "victim"), "keep\n");
    const commands = ["F=-f; rm $F victim", "rm -? victim", "rm ~ victim 2>/dev/null; true"];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Bash(rm -f *)"] }, commands);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(exists(ws, "victim")).toBe(true);
  });

  it("plain commands the rule does not name still run", async () => {
    const ws = await workspace();
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Bash(rm *)"] }, [
      "echo $HOME > /dev/null && echo rm",
      'for f in src/*; do echo "$f"; done',
    ]);
    expect(run.reason("c0")).toBeUndefined();
    expect(run.text("c0")).toContain("rm");
    expect(run.text("c1")).toContain("src/app.ts");
  });
});

describe("allow Bash, ask Bash(touch *): a program named only at run time asks", () => {
  it("every form asks, and nothing runs when the answer is no", async () => {
    const ws = await workspace();
    const files = TOUCH_FORMS.map((_, i) => `made${i}`);
    const commands = TOUCH_FORMS.map((form, i) => form(files[i]!));
    const run = await runBash(ws, { allow: ["Bash"], ask: ["Bash(touch *)"] }, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    expect(files.filter((file) => exists(ws, file))).toEqual([]);
  });

  it("an unrelated command with no unnamed program is not asked about", async () => {
    const ws = await workspace();
    const run = await runBash(ws, { allow: ["Bash"], ask: ["Bash(touch *)"] }, ["echo $HOME"]);
    expect(run.asked).toEqual([]);
    expect(run.reason("c0")).toBeUndefined();
  });
});

describe("never auto-allowed by pattern allow rules", () => {
  it("allow Bash(*) and Bash(eval:*) still ask for code runners and unnamed programs", async () => {
    const ws = await workspace();
    const commands = [
      "c=touch; $c made-a",
      "eval 'touch made-b'",
      "trap 'touch made-c' EXIT",
      "alias t=touch",
      "bind -x '\"\\C-x\": touch made-d'",
      "complete -C 'touch made-e' x",
      "PROMPT_COMMAND='touch made-f' true",
      "BASH_ENV=./x.sh true",
      "ENV=./x.sh true",
      "fc -l",
      "coproc touch made-g",
      "command touch made-h",
      "builtin echo hi",
      "source ./x.sh",
      "test -v 'a[$(touch made-i)]'",
      "echo touch made-j | bash",
    ];
    const run = await runBash(
      ws,
      { allow: ["Bash(*)", "Bash(eval:*)", "Bash(test *)", "Bash(bash)"] },
      commands,
    );
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    for (const name of ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"])
      expect(exists(ws, `made-${name}`), name).toBe(false);
  });
});

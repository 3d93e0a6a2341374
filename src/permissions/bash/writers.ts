/**
 * The files recognised writers write (`cp a b`, `tee f`, `dd of=f`, `sed -i`, `curl -o f`...), so
 * that Edit and Write deny rules, their ask rules and protected paths see them as they see a
 * `> file` redirection. Read over-inclusively: for copiers every operand after the first counts
 * as a destination, and a destination that may be a directory also names each source's basename
 * inside it. Writers this does not know (`tar x`, `unzip`, `patch`, `git`, interpreters) are the
 * sandbox's to confine.
 */
import { basename, HOLE, holesOf, list, type SimpleCommand } from "./types.ts";

/** A file a command writes, as written in it. */
export interface WriteTarget {
  text: string;
  /** The shell expands it (a glob, a brace, a leading `~`): it names files by pattern. */
  pattern: boolean;
}

export interface Written {
  targets: WriteTarget[];
  /** Why some file it writes is named only at run time (an expansion, `xargs`, find's `{}`). */
  unknown?: string;
}

interface Spec {
  /** Short options (letters) and long ones whose value is the next word or follows `=`. */
  values: string;
  /** What the command writes, given its parsed words. */
  written(parsed: Parsed): Word[];
}

interface Word {
  text: string;
  /** The words of the command it comes from (a joined destination comes from two). */
  from: number[];
}

interface Parsed {
  operands: Word[];
  /** Option values by option (`t`, `--target-directory`). */
  values: Map<string, Word[]>;
  /** Every option letter or long name given. */
  flags: Set<string>;
}

const COPY_VALUES = "t S --target-directory --suffix";

const copier: Spec["written"] = ({ operands, values }) => {
  const targets = values.get("t") ?? values.get("--target-directory") ?? [];
  const dests = targets.length > 0 ? targets : operands.slice(-1);
  const dirs = operands.length === 1 ? [{ text: ".", from: [] }] : dests;
  const joined = dirs.flatMap((dir) =>
    operands.map((source) => ({
      text: `${dir.text}/${basename(source.text)}`,
      from: [...dir.from, ...source.from],
    })),
  );
  return [...operands.slice(1), ...targets, ...joined];
};

const SPECS = new Map<string, Spec>([
  ["cp", { values: COPY_VALUES, written: copier }],
  ["mv", { values: COPY_VALUES, written: copier }],
  ["ln", { values: COPY_VALUES, written: copier }],
  ["install", { values: `${COPY_VALUES} m o g --mode --owner --group`, written: copier }],
  ["rsync", { values: "e f T --rsh --filter --exclude --include --temp-dir", written: copier }],
  ["scp", { values: "P i F o c l S J", written: copier }],
  ["tee", { values: "", written: ({ operands }) => operands }],
  ["touch", { values: "d r t --date --reference", written: ({ operands }) => operands }],
  ["truncate", { values: "s r --size --reference", written: ({ operands }) => operands }],
  [
    "sed",
    {
      values: "e f l --expression --file --line-length",
      written: ({ operands, flags }) => {
        if (!flags.has("i") && !flags.has("--in-place")) return [];
        const scripted = ["e", "f", "--expression", "--file"].some((f) => flags.has(f));
        return scripted ? operands : operands.slice(1);
      },
    },
  ],
  [
    "sort",
    { values: "o k t S T --output --key --field-separator", written: valuesOf("o --output") },
  ],
  [
    "curl",
    {
      values:
        "o c D K d H X u A e b T F x U E --output --cookie-jar --dump-header --trace " +
        "--trace-ascii --stderr --libcurl --config --data --header --request --user",
      written: (parsed) => [
        ...valuesOf(
          "o c D --output --cookie-jar --dump-header --trace --trace-ascii --stderr --libcurl",
        )(parsed),
        ...(["O", "--remote-name", "--remote-name-all", "J"].some((f) => parsed.flags.has(f))
          ? urlNames(parsed.operands)
          : []),
      ],
    },
  ],
  [
    "wget",
    {
      values: "O o a P e --output-document --output-file --append-output --directory-prefix",
      written: (parsed) => {
        const prefix = parsed.values.get("P") ?? parsed.values.get("--directory-prefix") ?? [];
        const names = urlNames(parsed.operands);
        return [
          ...valuesOf("O o a --output-document --output-file --append-output")(parsed),
          ...names,
          ...prefix.flatMap((dir) =>
            names.map((n) => ({ text: `${dir.text}/${n.text}`, from: [...dir.from, ...n.from] })),
          ),
        ];
      },
    },
  ],
]);

function valuesOf(names: string): Spec["written"] {
  return ({ values }) => list(names).flatMap((name) => values.get(name) ?? []);
}

/** The file names downloads get: each operand's last path segment, without query or fragment. */
function urlNames(operands: Word[]): Word[] {
  return operands.map((word) => {
    const name = word.text.replace(/[?#].*$/s, "").replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "");
    return { text: basename(name.replace(/\/+$/, "")) || "index.html", from: word.from };
  });
}

/** The files a command writes, when its program is a recognised writer. */
export function writtenBy(form: SimpleCommand): Written {
  const program = basename(form.argv[0] ?? "");
  if (program === "dd") return targetsOf(form, ddOutputs(form));
  const spec = SPECS.get(program);
  if (!spec) return { targets: [] };
  if (form.via === "xargs")
    return { targets: [], unknown: `xargs gives ${program} the names of the files it writes` };
  return targetsOf(form, spec.written(parse(form.argv, spec.values)));
}

function ddOutputs(form: SimpleCommand): Word[] {
  return form.argv.flatMap((arg, at) =>
    at > 0 && arg.startsWith("of=") ? [{ text: arg.slice(3), from: [at] }] : [],
  );
}

function targetsOf(form: SimpleCommand, words: Word[]): Written {
  const holes = holesOf(form);
  const written: Written = { targets: [] };
  for (const { text, from } of words) {
    if (text === "") continue;
    const expands = from.filter((at) => holes[at]?.includes(HOLE));
    const unknown = expands.find(
      (at) => /[$`]/.test(form.argv[at]!) || (form.via === "find" && form.argv[at]!.includes("{}")),
    );
    if (unknown !== undefined)
      written.unknown ??= `${JSON.stringify(form.argv[unknown])} is named only at run time`;
    else written.targets.push({ text, pattern: expands.length > 0 });
  }
  return written;
}

/** GNU-style words: clusters of short options, `--long[=value]`, `--` ending the options. */
function parse(argv: string[], valueNames: string): Parsed {
  const takes = new Set(list(valueNames));
  const parsed: Parsed = { operands: [], values: new Map(), flags: new Set() };
  const value = (name: string, word: Word) => {
    parsed.values.set(name, [...(parsed.values.get(name) ?? []), word]);
  };
  let options = true;
  for (let at = 1; at < argv.length; at++) {
    const arg = argv[at]!;
    if (!options || arg === "-" || !arg.startsWith("-")) {
      parsed.operands.push({ text: arg, from: [at] });
    } else if (arg === "--") {
      options = false;
    } else if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const given = eq < 0 ? arg : arg.slice(0, eq);
      // getopt takes any unambiguous prefix of a long option: read a prefix as every name it starts.
      const names = [...takes].filter((name) => name.startsWith("--") && name.startsWith(given));
      parsed.flags.add(given);
      for (const name of names.length > 0 ? names : [given]) parsed.flags.add(name);
      if (names.length === 0) continue;
      const word =
        eq >= 0
          ? { text: arg.slice(eq + 1), from: [at] }
          : { text: argv[at + 1] ?? "", from: [at + 1] };
      for (const name of names) value(name, word);
      if (eq < 0) at++;
    } else {
      for (let k = 1; k < arg.length; k++) {
        const letter = arg[k]!;
        parsed.flags.add(letter);
        if (!takes.has(letter)) continue;
        // The rest of the cluster is the value, or the next word when the letter ends it.
        const attached = arg.slice(k + 1);
        if (attached !== "") value(letter, { text: attached, from: [at] });
        else value(letter, { text: argv[at + 1] ?? "", from: [at + 1] });
        if (attached === "") at++;
        break;
      }
    }
  }
  return parsed;
}

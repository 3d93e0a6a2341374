/**
 * Programs that run the command given in their arguments ("wrappers"): stripped, repeatedly, for
 * deny and ask matching (C10), and never auto-allowed. `npx` is not here: it runs a package, and
 * `Bash(npx *)` is flagged by allowsAnything instead. Option lists follow the util-linux,
 * coreutils, strace and systemd help texts; an option missing from a list would make its value
 * look like the wrapped program.
 */
import { list } from "./types.ts";

export interface WrapperSpec {
  /**
   * Options whose value is the next word (`timeout -s KILL`). `--opt=value` is one word, and a
   * short one may end a cluster (`timeout -vs KILL`) or carry its value (`nice -n5`).
   */
  valueOptions?: string[];
  /** Operands before the wrapped command: timeout's DURATION, chroot's NEWROOT, flock's FILE. */
  operands?: number;
  /** `NAME=value` words before the command are skipped (env, sudo). */
  assignments?: boolean;
  /**
   * Options whose value is a command line, analysed again as text: the next word (`script -c
   * 'rm x'`, `env -S 'rm x'`), attached (`env -S'rm x'`, `--command=rm x`) or ending a cluster
   * (`script -qc 'rm x'`). Also recognised right after the operands (`flock FILE -c 'rm x'`).
   */
  commandOptions?: string[];
  /** Options may follow operands (GNU getopt permutes): command options are looked for everywhere. */
  permute?: boolean;
  /** The command comes only from a command option (`script -c`); the operands are no command. */
  commandOnly?: boolean;
}

export const WRAPPERS = new Map<string, WrapperSpec>([
  ["timeout", { valueOptions: list("-s --signal -k --kill-after"), operands: 1 }],
  [
    "env",
    {
      valueOptions: list("-u --unset -C --chdir"),
      assignments: true,
      commandOptions: list("-S --split-string"),
    },
  ],
  ["nice", { valueOptions: list("-n --adjustment") }],
  ["ionice", { valueOptions: list("-c --class -n --classdata -p --pid -P --pgid") }],
  ["nohup", {}],
  ["time", { valueOptions: list("-f --format -o --output") }],
  [
    "sudo",
    {
      valueOptions: list(
        "-u --user -g --group -h --host -p --prompt -C --close-from -r --role -t --type " +
          "-D --chdir -R --chroot -U --other-user -T --command-timeout",
      ),
      assignments: true,
    },
  ],
  ["doas", { valueOptions: list("-u -C") }],
  [
    "xargs",
    {
      valueOptions: list(
        "-a --arg-file -d --delimiter -E -I -L --max-lines -n --max-args -P --max-procs " +
          "-s --max-chars --process-slot-var",
      ),
    },
  ],
  ["watch", { valueOptions: list("-n --interval -q --equexit") }],
  ["stdbuf", { valueOptions: list("-i --input -o --output -e --error") }],
  ["command", {}],
  ["exec", { valueOptions: list("-a") }],
  ["builtin", {}],
  ["setsid", {}],
  ["chroot", { valueOptions: list("--userspec --groups"), operands: 1 }],
  // flock [options] FILE COMMAND... | flock [options] FILE -c 'COMMAND'
  [
    "flock",
    {
      valueOptions: list("-w --timeout --wait -E --conflict-exit-code"),
      operands: 1,
      commandOptions: list("-c --command"),
    },
  ],
  // taskset [options] MASK COMMAND... (-c is a flag: the mask is a CPU list)
  ["taskset", { operands: 1 }],
  [
    "unshare",
    {
      valueOptions: list(
        "-R --root -w --wd -S --setuid -G --setgid --propagation --setgroups --monotonic " +
          "--boottime --map-user --map-group --map-users --map-groups -l --load-interp",
      ),
    },
  ],
  ["nsenter", { valueOptions: list("-t --target -S --setuid -G --setgid -W --wdns --env") }],
  [
    "chrt",
    { valueOptions: list("-T --sched-runtime -P --sched-period -D --sched-deadline"), operands: 1 },
  ],
  [
    "numactl",
    {
      valueOptions: list(
        "-i --interleave -p --preferred -P --preferred-many -w --weighted-interleave " +
          "-C --physcpubind -N --cpunodebind -m --membind -S --shm -f --file -I --shmid " +
          "-L --length -o --offset -M --shmmode",
      ),
    },
  ],
  [
    "setpriv",
    {
      valueOptions: list(
        "--ambient-caps --inh-caps --bounding-set --ruid --euid --rgid --egid --reuid --regid " +
          "--groups --securebits --pdeathsig --selinux-label --apparmor-profile " +
          "--landlock-access --landlock-rule --seccomp-filter",
      ),
    },
  ],
  ["prlimit", { valueOptions: list("-p --pid -o --output") }],
  [
    "strace",
    {
      valueOptions: list(
        "-a -b -e -E -I -o -O -p -P -s -S -u -U -X --columns --detach-on --env --attach " +
          "--user --interruptible --trace --signal --status --trace-path --abbrev --verbose " +
          "--raw --read --write --quiet --kvm --inject --fault --output --string-limit " +
          "--const-print-style --summary-syscall-overhead --summary-sort-by --summary-columns",
      ),
    },
  ],
  [
    "ltrace",
    {
      valueOptions: list(
        "-a --align -A -D --debug -e -F --config -l --library -n --indent -o --output -p -s " +
          "-u -w --where -x",
      ),
    },
  ],
  // valgrind and firejail take `--option=value` only.
  ["valgrind", {}],
  ["firejail", {}],
  ["catchsegv", {}],
  ["busybox", {}],
  ["toybox", {}],
  ["eatmydata", {}],
  ["nocache", {}],
  ["unbuffer", {}],
  ["dbus-run-session", {}],
  ["fakeroot", { valueOptions: list("-l --lib -f --faked -i -s -b --fd-base") }],
  ["faketime", { valueOptions: list("--date-prog"), operands: 1 }],
  ["torsocks", { valueOptions: list("-u --user -p --pass -a --address -P --port") }],
  ["proxychains", { valueOptions: list("-f") }],
  ["proxychains4", { valueOptions: list("-f") }],
  ["pkexec", { valueOptions: list("--user") }],
  ["cgexec", { valueOptions: list("-g") }],
  [
    "xvfb-run",
    {
      valueOptions: list(
        "-e --error-file -f --auth-file -n --server-num -p --xauth-protocol -s --server-args " +
          "-w --wait",
      ),
    },
  ],
  [
    "systemd-run",
    {
      valueOptions: list(
        "-H --host -M --machine -u --unit -p --property --description --slice --service-type " +
          "--uid --gid --nice --working-directory -E --setenv --path-property --socket-property " +
          "--timer-property --on-active --on-boot --on-startup --on-unit-active " +
          "--on-unit-inactive --on-calendar",
      ),
    },
  ],
  // runuser -u USER COMMAND... | runuser USER -c 'COMMAND' (options anywhere, as in su)
  [
    "runuser",
    {
      valueOptions: list(
        "-u --user -g --group -G --supp-group -w --whitelist-environment -s --shell",
      ),
      commandOptions: list("-c --command --session-command"),
      permute: true,
    },
  ],
  // sg GROUP [-c] 'COMMAND': the command is one string run by /bin/sh.
  ["sg", { operands: 1, commandOptions: list("-c") }],
  // script [options] [FILE]: runs a command only with -c (else an interactive shell).
  [
    "script",
    {
      valueOptions: list(
        "-I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format -E --echo " +
          "-o --output-limit",
      ),
      commandOptions: list("-c --command"),
      permute: true,
      commandOnly: true,
    },
  ],
  // macOS
  ["caffeinate", { valueOptions: list("-t -w") }],
]);

/** The wrapper names, for callers that document or display them. */
export const BASH_WRAPPERS: readonly string[] = [...WRAPPERS.keys()];

/**
 * Node built-ins that only some tools use, loaded by the first call that needs them rather than
 * by `import("skein")`: child processes (Bash, Grep, the sandbox probe), worker threads (Glob's
 * bounded matching), `vm` and `string_decoder` (Bash's output). Each costs resident memory in
 * every process that imports skein, also those whose agents never run these tools.
 */
export const childProcess = () => process.getBuiltinModule("node:child_process");
export const workerThreads = () => process.getBuiltinModule("node:worker_threads");
export const vm = () => process.getBuiltinModule("node:vm");
export const stringDecoder = () => process.getBuiltinModule("node:string_decoder");

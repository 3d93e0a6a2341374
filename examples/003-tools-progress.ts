// Seed 003 (zh), "工具" (tools): "报告进度" (report progress).
// The page's snippet relies on the import of its first example; it is added here.
// biome-ignore-all lint/correctness/noUnusedFunctionParameters: the seed's code, kept as written.
import { defineTool } from "skein";

const indexRepository = defineTool({
  id: "index-repository",
  async *execute(input: { path: string }) {
    yield { phase: "scan" };
    yield { phase: "embed" };
    return { indexed: 248 };
  },
});

export { indexRepository };

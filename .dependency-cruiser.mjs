/**
 * `npm run lint:deps`: the layers of src/ (ARCHITECTURE.md, "Layers"). Each part imports only
 * from itself and the layers below it, type-only imports and `import()` included, so the parts of
 * src/ form a directed acyclic graph and no cycle runs through two of them.
 */

/** From the bottom. A layer of several parts: none of them imports another. */
const LAYERS = [
  ["core"],
  ["tools"],
  ["model"],
  ["run"],
  ["tracing"],
  ["permissions"],
  ["builtin"],
  ["sessions"],
  ["agents"],
  ["index.ts", "testing", "mcp", "adapters", "pgboss", "web"],
  ["cli"],
];

/** The part a path of src/ belongs to: a top-level folder, or a top-level file. */
const part = (name) => `^src/${name.replace(".", "\\.")}${name.endsWith(".ts") ? "$" : "/"}`;

const layerRules = LAYERS.flatMap((layer, index) => {
  const below = LAYERS.slice(0, index).flat();
  return layer.map((name) => ({
    name: `layer-${name.replace(".ts", "")}`,
    severity: "error",
    comment: below.length
      ? `src/${name} imports only from itself and the layers below it: ${below.join(", ")}.`
      : `src/${name} is the lowest layer: it imports nothing else of src/.`,
    from: { path: part(name) },
    to: { path: "^src/", pathNot: [name, ...below].map(part) },
  }));
});

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...layerRules,
    {
      name: "no-cycle-between-parts",
      severity: "error",
      comment: "A cycle of imports may stay inside one part of src/, never pass through another.",
      from: { path: "^src/([^/]+)(/|$)" },
      to: { circular: true, via: { pathNot: "^src/$1(/|$)" } },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "An import that resolves to nothing would hide a dependency from these rules.",
      from: { path: "^src/" },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    includeOnly: "^src/",
    // Type-only imports count: a layer may not name a type from above either.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // Without the package's own types in the way: `skein/...` resolves through tsconfig paths.
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "types"] },
  },
};

/**
 * Bash command analysis for the permission gate (DESIGN "Permissions and built-ins: the
 * contract"): a strict subset may be auto-allowed; everything else is read over-inclusively so
 * that no syntax turns a deny into an ask or an allow (RELIABILITY C7-C11, C14).
 */
export { allowVerdict, describeCommand, findCommands, unsafeToAllow } from "./allow.ts";
export { analyzeCommand } from "./analyze.ts";
export { allowsAnything } from "./broad.ts";
export { type DenyView, denyCouldMatch, denyForms, denyView } from "./deny.ts";
export {
  type BashCall,
  bashConcerns,
  bashDenial,
  bashRuleMatcher,
  bashVerdict,
  type EditRules,
  type WriteConcern,
} from "./judge.ts";
export { couldMatchBashPattern, matchesBashPattern } from "./patterns.ts";
export { type FileReadConcern, fileReadConcern, pathForms, type ReadRules } from "./reads.ts";
export {
  type CommandAnalysis,
  HOLE,
  MAX_SIMPLE_COMMANDS,
  type Redirect,
  type SimpleCommand,
} from "./types.ts";
export { BASH_WRAPPERS } from "./wrappers.ts";

export type { Script, ScriptEntry, ScriptedModel, ScriptedTurn } from "./scripted-model.ts";
export { scriptedModel } from "./scripted-model.ts";

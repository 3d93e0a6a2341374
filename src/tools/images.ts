// What an image in a tool result may weigh, wherever it comes from (Read, an MCP server): one
// limit, so the model is never sent more from one source than from another.

/** The largest image, in decoded bytes, a tool result carries to the model. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** A size as people read it: bytes, KiB, MiB... */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}

// The entries sessionStoreConformance writes to check that a store keeps strings byte for byte.

/** At least 16 MiB of UTF-8: ASCII, JSON escapes, quotes, newlines, 2-, 3- and 4-byte characters. */
export function largeEntry(): string {
  const unit = `{"text":"line \\"quoted\\" back\\\\slash\\n"} é ü 中文 😀 𝄞 'single' $1 %s \r\n\t`;
  const unitBytes = Buffer.byteLength(unit);
  const target = 16 * 1024 * 1024;
  return `${unit.repeat(Math.ceil(target / unitBytes))}end`;
}

/** Strings a careless store changes: normalisation, astral planes, invisible and special characters. */
export function unicodeEntries(): string[] {
  return [
    "",
    " ",
    "  leading and trailing spaces  ",
    "e\u0301", // e + combining acute: must not become é
    "\u00e9", // precomposed é: must not become e + combining
    "\u0041\u030A\u0323", // A with ring above and dot below, unnormalised order
    "😀🏳️‍🌈👩‍👩‍👧‍👦", // astral characters and ZWJ sequences
    "𝄞 𠜎 🀄", // other astral planes
    "\uFEFFstarts with a byte order mark",
    "\u2028line\u2029paragraph separators",
    "\uFFFF\uFFFE\uFDD0 noncharacters",
    "عربي עברית mixed with LTR",
    "\u200B\u200C\u200D\u2060 zero-width",
    "line\nline\r\nline\rline",
    "\u0001\u001F\u007F\u0080\u009F control characters",
    "'); DROP TABLE skein_entries; -- $1 ? :name @name",
    '{"json":"text","escaped":"\\u0000 and \\ud800","quote":"\\""}',
    JSON.stringify({ nul: "\u0000", lone: "\ud800", astral: "😀" }),
    "\\",
    "{}",
    "NULL",
  ];
}

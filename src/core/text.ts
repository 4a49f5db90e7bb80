// Text that came from outside (cluster objects, Secrets, files) on its way to a terminal.

// Control characters a terminal would act on, shown escaped: C0 but newline and tab (ESC starts colour, cursor and OSC 52 clipboard-write sequences), DEL,
// C1 (0x80-0x9f, CSI/OSC in 8-bit form), and the bidirectional overrides that reorder what is displayed.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** A value quoted in a one-line message (a flag's value, a name the user typed): `printable`, tabs and line breaks escaped too (it cannot start a line). */
export function printableValue(text: string): string {
  return printable(text).replace(/[\t\n]/g, (c) => (c === "\t" ? "\\x09" : "\\x0a"));
}

/** `printableValue` cut to `max` characters, its full length said: a 15 MiB value from outside must not become a 15 MiB line or table cell. */
export function shownValue(text: string, max: number): string {
  return text.length > max ? `${printableValue(text.slice(0, max))}... (${text.length} characters)` : printableValue(text);
}

/** Whether a value holds characters `printable` would escape (a .env value cannot carry them safely). */
export function hasControlCharacters(text: string): boolean {
  return printable(text) !== text;
}

// A URL's password as `****` (the Pulumi CLI prints its backend URL whole in its errors), up to the word's last `@`: a password with a raw `/` or `@` is
// still hidden. The user name stays (it says which role failed).
export function redactUrlPasswords(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:]*):(\S*)@/gi, "$1$2:****@").replace(/([?&](?:password|sslpassword)=)[^&\s]*/gi, "$1****");
}

/** FNV-1a over the code points of `text`: a short suffix that tells names apart (not a secret; the core has no node:crypto). */
export const fnv1a = (text: string) => [...text].reduce((h, c) => Math.imul(h ^ (c.codePointAt(0) ?? 0), 0x01000193) >>> 0, 0x811c9dc5);

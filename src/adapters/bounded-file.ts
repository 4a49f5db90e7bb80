// A file named by the operator (contract, snapshot, outputs, stack file): a regular file of bounded size, or a clear refusal. `/dev/zero`, a FIFO or a
// 5 GB file must not grow the process until it dies.
import * as fs from "node:fs";
import * as path from "node:path";
import { UserError } from "../core/errors";
import { EXIT, type ExitCode } from "../core/findings";

/** Documented limits (docs/commands.md, "Limits"). */
export const FILE_LIMITS = {
  contract: 1 * 2 ** 20,
  snapshot: 64 * 2 ** 20,
  outputs: 16 * 2 ** 20,
  stackFile: 1 * 2 ** 20,
  envTemplate: 1 * 2 ** 20,
  // client-node reads a kubeconfig whole: it is checked against this first.
  kubeconfig: 16 * 2 ** 20,
} as const;

const mib = (bytes: number) => `${bytes / 2 ** 20} MiB`;

/** What a path that is not a regular file is, for messages. */
export const fileKind = (stat: fs.Stats) =>
  stat.isDirectory() ? "a folder" : stat.isFIFO() ? "a pipe" : stat.isCharacterDevice() || stat.isBlockDevice() ? "a device" : "not a regular file";

/** The text of `file` (`what` names it). Refuses what is not a regular file, or is larger than `maxBytes` (on the open descriptor, again while read). */
export function readBoundedText(file: string, what: string, maxBytes: number, exitCode: ExitCode = EXIT.ERROR, shown = file): string {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO nobody writes to must not block before fstat can refuse it.
    fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(`cannot read ${what} ${shown}: ${code ?? (err as Error).message}`, exitCode);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new UserError(`cannot read ${what} ${shown}: it is ${fileKind(stat)}; give a regular file`, exitCode);
    if (stat.size > maxBytes) {
      throw new UserError(`${what} ${shown} is ${(stat.size / 2 ** 20).toFixed(1)} MiB: larger than the ${mib(maxBytes)} limit`, exitCode);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes) throw new UserError(`${what} ${shown} grew past the ${mib(maxBytes)} limit while being read`, exitCode);
      chunks.push(chunk.subarray(0, n));
    }
    return utf8Text(Buffer.concat(chunks), `${what} ${shown}`, exitCode);
  } finally {
    fs.closeSync(fd);
  }
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const lineOf = (bytes: Buffer, offset: number) => bytes.subarray(0, offset).toString("latin1").split("\n").length;

// UTF-8 only: a UTF-16 file (Windows editors) or a Latin-1 one would otherwise reach the YAML parser as replacement characters and read as a string.
function utf8Text(bytes: Buffer, named: string, exitCode: ExitCode): string {
  const startsWith = (...marks: number[]) => bytes.length >= marks.length && marks.every((b, i) => bytes[i] === b);
  if (startsWith(0xff, 0xfe, 0, 0) || startsWith(0, 0, 0xfe, 0xff)) throw new UserError(`${named} is UTF-32 text: save it as UTF-8`, exitCode);
  if (startsWith(0xff, 0xfe) || startsWith(0xfe, 0xff)) throw new UserError(`${named} is UTF-16 text: save it as UTF-8`, exitCode);
  // UTF-16 without a byte order mark: ASCII text with a NUL byte after (or before) every character.
  const sample = bytes.subarray(0, 64);
  const nulAt = (parity: number) => sample.length >= 4 && sample.every((b, i) => (i % 2 === parity ? b === 0 : b !== 0));
  if (nulAt(0) || nulAt(1)) throw new UserError(`${named} looks like UTF-16 text (a NUL byte every other byte): save it as UTF-8`, exitCode);
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    // The first byte that does not decode: where the round trip through UTF-8 first differs.
    const lossy = Buffer.from(bytes.toString("utf8"), "utf8");
    let at = 0;
    while (at < bytes.length && bytes[at] === lossy[at]) at++;
    throw new UserError(`${named} is not UTF-8 text (line ${lineOf(bytes, at)}): save it as UTF-8`, exitCode);
  }
  const nul = bytes.indexOf(0);
  if (nul !== -1) throw new UserError(`${named} holds a NUL byte (line ${lineOf(bytes, nul)}): it is not a text file`, exitCode);
  return text;
}

/** The nearest folder at or above `start` holding `file`. */
export function findUp(start: string, file: string): string | undefined {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, file))) return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

// What `. .sandbox/env` exports, read back by the sandbox e2e files: `export NAME='value'` lines,
// and `export PATH='dirs':"$PATH"` (the sandbox's tools ahead of the caller's PATH).
import * as fs from "node:fs";

/** The variables the env file `file` exports, its PATH put ahead of `callerPath`. */
export function readSandboxEnv(file: string, callerPath: string | undefined): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = /^export (\w+)='(.*)'$/.exec(line);
    if (m?.[1] && m[2] !== undefined) out[m[1]] = m[2];
    const p = /^export PATH='(.*)':"\$PATH"$/.exec(line);
    if (p?.[1]) out.PATH = `${p[1]}:${callerPath}`;
  }
  return out;
}

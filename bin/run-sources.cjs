// The `exposure` command from its TypeScript sources (bin/exposure.cjs starts this under tsx).
"use strict";
// A syntax error in an edited source that cli/main.ts loads: file:line:col, not tsx's trace.
const main = require("./load-failure.cjs").loadMainOrExit(() => require("../cli/main.ts"), require("node:path").resolve(__dirname, ".."));
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`exposure: internal error: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);

// The `exposure` command from its TypeScript sources (bin/exposure.cjs starts this under tsx).
"use strict";
let main;
try {
  ({ main } = require("../cli/main.ts"));
} catch (err) {
  // A syntax error in an edited source that cli/main.ts loads: file:line:col, not tsx's trace.
  const failure = require("./load-failure.cjs").loadFailure(err, require("node:path").resolve(__dirname, ".."));
  if (failure === undefined) throw err;
  process.stderr.write(`exposure: ${failure}\n`);
  process.exit(1);
}
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`exposure: internal error: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);

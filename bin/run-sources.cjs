// The `exposure` command from its TypeScript sources (bin/exposure.cjs starts this under tsx).
"use strict";
const { main } = require("../cli/main.ts");
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`exposure: internal error: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);

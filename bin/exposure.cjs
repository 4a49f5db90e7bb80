#!/usr/bin/env node
// The `exposure` command: TypeScript sources run through tsx (no build step to forget).
require("tsx/cjs");
const { main } = require("../cli/main.ts");
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`exposure: internal error: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);

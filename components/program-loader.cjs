"use strict";
// Entry point `pulumi up` / `preview` run (Pulumi.yaml `main:`, `runtime.options.typescript: false`):
// the program bundled in dist/ (built again first when older than the sources or changed since it
// was built, scripts/build.cjs), nothing transpiled or type-checked at each start (type-checking
// is `npm run typecheck`).
const path = require("node:path");
const { enableCompileCache } = require("node:module");
if (typeof enableCompileCache === "function") enableCompileCache();

const root = path.join(__dirname, "..");
const runError = (message) => new (require("@pulumi/pulumi").RunError)(message);
const { ensureBuilt, PROGRAM_BUNDLE } = require(path.join(root, "scripts", "build.cjs"));
const { error, warning } = ensureBuilt(root);
if (error) throw runError(error);
if (warning) require("@pulumi/pulumi").log.warn(warning);
// The SDK maps every stack through source maps, and every resource captures its stack at
// registration: about 7 ms of CPU each, a fifth of a 100-entry `up`. The bundle's own frames
// (unminified, named after the sources) are enough.
Error.prepareStackTrace = undefined;
const program = require(path.join(root, PROGRAM_BUNDLE));
// A module exporting nothing would be taken for a program declaring nothing: preview would plan
// to delete every resource.
if (typeof program !== "function") {
  throw runError(`${PROGRAM_BUNDLE} exports no program (a function declaring the stack): run \`npm run build\`; nothing was declared, so nothing is planned`);
}
module.exports = program;

import * as path from "node:path";
import { describe, expect, it } from "vitest";

// bin/load-failure.cjs: which errors are a module that could not be loaded (one line, no stack
// trace) and which are bugs of code that loaded fine (their stack trace kept).
const { loadFailure } = require("../bin/load-failure.cjs") as { loadFailure: (err: unknown, root: string) => string | undefined };
const root = path.join(path.sep, "opt", "ui-exposure");

const notFound = (request: string, from: string) =>
  Object.assign(new Error(`Cannot find module '${request}'\nRequire stack:\n- ${from}`), { code: "MODULE_NOT_FOUND", requireStack: [from] });

describe("loadFailure", () => {
  it("a module of dist/ that is missing or does not compile asks for npm run build", () => {
    expect(loadFailure(notFound("../../vendor/code-cache.cjs", `${root}/dist/cli/commands/status.js`), root)).toBe(
      "dist/vendor/code-cache.cjs cannot be loaded (no such file): dist/ is damaged; run `npm run build`",
    );
    const esm = Object.assign(new Error("Cannot find module"), { code: "ERR_MODULE_NOT_FOUND", url: `file://${root}/dist/cli/commands/render.js` });
    expect(loadFailure(esm, root)).toContain("dist/cli/commands/render.js cannot be loaded (no such file)");
    const syntax = new SyntaxError("Unexpected end of input");
    syntax.stack = `${root}/dist/cli/context.js:6\n      desc \n\nSyntaxError: Unexpected end of input\n    at wrapSafe (node:internal/modules/cjs/loader:1464:18)`;
    expect(loadFailure(syntax, root)).toBe("dist/cli/context.js cannot be loaded (Unexpected end of input at line 6): dist/ is damaged; run `npm run build`");
  });

  it("a syntax error in a TypeScript source (tsx's or esbuild's) is file:line:col from the project folder, 1-based column", () => {
    const tsx = Object.assign(new Error(`Transform failed with 1 error:\n${root}/src/core/plan.ts:367:6: ERROR: Expected identifier but found "="`), {
      name: "TransformError",
    });
    expect(loadFailure(tsx, root)).toMatch(/^src\/core\/plan\.ts:367:7: Expected identifier but found "="; fix the source/);
    const esbuild = Object.assign(new Error("Transform failed"), {
      errors: [{ text: "Unexpected end of file", location: { file: `${root}/index.ts`, line: 2, column: 0 } }],
    });
    expect(loadFailure(esbuild, root)).toMatch(/^index\.ts:2:1: Unexpected end of file; /);
  });

  it("leaves alone what is not a load failure of ours: runtime errors, a missing npm package, a missing file outside dist/", () => {
    const runtime = new SyntaxError("Unexpected token } in JSON at position 1");
    runtime.stack = `SyntaxError: Unexpected token } in JSON at position 1\n    at JSON.parse (<anonymous>)\n    at ${root}/dist/cli/commands/render.js:12:3`;
    expect(loadFailure(runtime, root)).toBeUndefined();
    expect(loadFailure(new TypeError("x is not a function"), root)).toBeUndefined();
    expect(loadFailure(notFound("zod", `${root}/dist/cli/context.js`), root)).toBeUndefined();
    expect(loadFailure(notFound("./settings.json", `${root}/src/core/context.js`), root)).toBeUndefined();
    expect(loadFailure(undefined, root)).toBeUndefined();
    expect(loadFailure("a string", root)).toBeUndefined();
  });
});

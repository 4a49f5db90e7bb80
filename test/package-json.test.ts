// package.json's allowScripts covers every dependency with an install script (package-lock.json's
// hasInstallScript): `npm ci` then prints no "not yet covered by allowScripts" warning, and stays
// correct when npm makes unreviewed scripts fatal.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const projectDir = path.resolve(__dirname, "..");
const read = (file: string) => JSON.parse(fs.readFileSync(path.join(projectDir, file), "utf8")) as Record<string, unknown>;

describe("package.json allowScripts", () => {
  it("names every dependency of the lock file that has an install script, each denied (none is needed)", () => {
    const packages = read("package-lock.json").packages as Record<string, { hasInstallScript?: boolean }>;
    const withScripts = Object.entries(packages)
      .filter(([where, p]) => where !== "" && p.hasInstallScript)
      .map(([where]) => where.slice(where.lastIndexOf("node_modules/") + "node_modules/".length));
    expect(withScripts.length).toBeGreaterThan(0);
    expect(Object.keys(read("package.json").allowScripts as Record<string, boolean>).sort()).toEqual([...new Set(withScripts)].sort());
    expect(new Set(Object.values(read("package.json").allowScripts as Record<string, boolean>))).toEqual(new Set([false]));
  });
});

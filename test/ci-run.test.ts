// .ci/run's accounting, run on a copy with every tool it drives stubbed (npm, apt-get, the
// toolchain and Node.js 24 scripts): what its last line counts.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MEASURED_SECONDS, planLanes } from "./support/e2e-lanes";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const exe = (file: string, body: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/bash\n${body}\n`, { mode: 0o755 });
};
const report = (passed: number) => JSON.stringify({ numPassedTests: passed, numFailedTests: 0, success: true });

interface Stubs {
  env?: Record<string, string>;
  /** scripts/node24.sh gives a Node.js 24 (a stub that runs the unit suite when asked). */
  node24?: boolean;
  /** The e2e suite's sandbox file leaves a report of its npm test under Node.js 24. */
  sandboxNode24Report?: boolean;
  /** Files in test/e2e of the copy (the budget guard counts their longer lane). */
  e2eFiles?: string[];
  /** The start-up bench (`npm run bench`) measures (exit 0, the default) or fails. */
  bench?: "measures" | "fails";
}

/** Runs a copy of .ci/run where everything passes but the Cilium stage, whose build fails. */
function ciRunWithCiliumStageFailing(opts: Stubs = {}) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "ci-run-test-"));
  dirs.push(d);
  fs.mkdirSync(path.join(d, ".ci"));
  fs.copyFileSync(path.resolve(__dirname, "../.ci/run"), path.join(d, ".ci/run"));
  fs.chmodSync(path.join(d, ".ci/run"), 0o755);
  for (const f of opts.e2eFiles ?? []) exe(path.join(d, "test/e2e", f), "");
  // The guard's plan of the lanes, as it is (the copy's node_modules is the project's).
  fs.mkdirSync(path.join(d, "test/support"), { recursive: true });
  for (const f of ["e2e-lanes.ts", "e2e-lanes-seconds.ts"]) fs.copyFileSync(path.resolve(__dirname, "support", f), path.join(d, "test/support", f));
  fs.symlinkSync(path.resolve(__dirname, "../node_modules"), path.join(d, "node_modules"));
  const bin = path.join(d, "toolbin");
  exe(path.join(bin, "promtool"), "exit 0");
  // The base build takes a second, marked while it runs; the unit suite's stub fails if it runs meanwhile.
  exe(
    path.join(d, "scripts/e2e-toolchain.sh"),
    `[[ "\${1:-}" == bin ]] && { echo ${bin}; exit 0; }
[[ "\${E2E_ONLY:-}" == cilium ]] && exit 1
[[ -z "\${E2E_ONLY:-}" ]] && { touch base-building; sleep 1; rm base-building; }
exit 0`,
  );
  exe(path.join(d, "scripts/e2e.sh"), "exit 0");
  // The Node.js 24 stub: its version, or a unit run that says it ran (and what it counted).
  exe(
    path.join(d, "n24/node"),
    `[[ "$1" == --version ]] && { echo v24.0.0; exit 0; }
for a in "$@"; do [[ "$a" == --outputFile.json=* ]] && echo '${report(7)}' > "\${a#--outputFile.json=}"; done
touch unit24-ran; exit 0`,
  );
  exe(path.join(d, "scripts/node24.sh"), opts.node24 ? `echo ${path.join(d, "n24/node")}` : "exit 1");
  const stubs = path.join(d, "stubs");
  exe(path.join(stubs, "apt-get"), "exit 0");
  exe(path.join(stubs, "python3"), "exit 0");
  exe(
    path.join(stubs, "npm"),
    `mkdir -p test-output
echo "$*" >> npm-calls
case "$1 \${2:-}" in
  "test "*) [ ! -f base-building ] && echo '${report(5)}' > test-output/unit.json || echo '{"numPassedTests":0,"numFailedTests":1,"success":false}' > test-output/unit.json ;;
  "run e2e")
    out=test-output/e2e.json; n=3
    for a in "$@"; do [[ "$a" == --outputFile.json=* ]] && { out=\${a#--outputFile.json=}; n=1; }; done
    echo '{"numPassedTests":'$n',"numFailedTests":0,"success":true}' > "$out"
    echo '[{"file":"test/e2e/a.e2e.ts","seconds":12.3,"state":"passed"},{"file":"test/e2e/b.e2e.ts","seconds":45.6,"state":"failed"}]' > test-output/e2e-files.json
    ${opts.sandboxNode24Report ? `[ -n "\${UI_EXPOSURE_NODE24:-}" ] && [ "$out" = test-output/e2e.json ] && echo '${report(9)}' > test-output/unit-node24.json` : ":"}
    ;;
  "run -s") [[ "$3" == bench ]] && exit ${opts.bench === "fails" ? 1 : 0} ;;
esac
exit 0`,
  );
  const r = spawnSync(path.join(d, ".ci/run"), [], {
    encoding: "utf8",
    env: { ...process.env, ...opts.env, PATH: `${stubs}:${process.env.PATH}` },
    timeout: 60_000,
  });
  const npmCalls = fs.existsSync(path.join(d, "npm-calls")) ? fs.readFileSync(path.join(d, "npm-calls"), "utf8").trim().split("\n") : [];
  return { ...r, unit24Ran: fs.existsSync(path.join(d, "unit24-ran")), npmCalls };
}

describe(".ci/run", () => {
  it("installs the policy pack's own dependencies right after the project's, before the typecheck", () => {
    const calls = ciRunWithCiliumStageFailing().npmCalls;
    expect(calls.slice(0, 3)).toEqual(["ci --no-audit --no-fund", "ci --prefix policy-pack --no-audit --no-fund", "run -s typecheck"]);
  });

  it("counts a Cilium stage that could not be built as one failure, whatever the e2e suite reports after it", () => {
    const r = ciRunWithCiliumStageFailing();
    expect(r.stdout).toContain("!! the Cilium stage could not be built (counted as one failure");
    // 2 static checks + 5 unit + 3 e2e passed; Node.js 24 (stubbed away) and the Cilium stage failed
    expect(r.stdout.trim().split("\n").at(-1)).toBe("10 passed, 2 failed");
    expect(r.status).toBe(1);
  });

  // The guard's figures (test/support/e2e-lanes.ts) for these files: a file with no figure yet
  // counts as the longest; the suite takes its longer lane, not the sum. Cilium: what its e2e adds
  // to the longer lane + the stage cold (658 s); the rest: the longer lane + the Node.js 24 scenario (21 s).
  const guardFiles = ["sandbox.e2e.ts", "team.e2e.ts", "cilium-datapath.e2e.ts", "new.e2e.ts"];
  const longest = Math.max(...Object.values(MEASURED_SECONDS));
  const rest = planLanes(["sandbox", "team", "new"]).seconds + 21;
  const cilium = planLanes(["sandbox", "team", "new", "cilium-datapath"]).seconds + 21 - rest + 658;

  it("skips the Cilium stage and its e2e when, with them and the rest of the e2e suite (its longer lane, as measured), the run would pass 90 min", () => {
    // bash counts SECONDS on from the value it inherits: the run starts a minute too late
    const start = 5400 - cilium - rest + 60;
    const r = ciRunWithCiliumStageFailing({ env: { SECONDS: String(start) }, e2eFiles: guardFiles });
    expect(r.stdout).toContain(`!! budget guard: no measured time for test/e2e/new.e2e.ts yet: counted as ${longest}s`);
    expect(r.stdout).toMatch(
      new RegExp(
        `!! Cilium stage and e2e skipped by \\.ci/run: \\d+s elapsed \\+ about ${cilium}s for the Cilium stage and its e2e \\+ ${rest}s for the rest of the e2e suite \\(its longer lane\\) would pass 90 min`,
      ),
    );
    expect(r.stdout).not.toContain("the Cilium stage could not be built");
    expect(r.stdout.trim().split("\n").at(-1)).toBe("10 passed, 1 failed");
  });

  it("runs the Cilium stage when the longer lane fits in 90 min, though the files' sum would not", () => {
    const start = 5400 - cilium - rest - 60;
    const sum = (MEASURED_SECONDS.sandbox ?? 0) + (MEASURED_SECONDS.team ?? 0) + (MEASURED_SECONDS["cilium-datapath"] ?? 0) + longest + 21 + 658;
    expect(start + sum).toBeGreaterThan(5400);
    const r = ciRunWithCiliumStageFailing({ env: { SECONDS: String(start) }, e2eFiles: guardFiles });
    expect(r.stdout).not.toContain("Cilium stage and e2e skipped");
    expect(r.stdout).toContain("!! the Cilium stage could not be built");
  });

  it("builds the base toolchain in the background, and runs the unit suite only once that build has ended", () => {
    const r = ciRunWithCiliumStageFailing();
    expect(r.stdout).toContain("== base e2e toolchain: building in the background (nice)");
    expect(r.stdout).toMatch(/== base e2e toolchain ready in \d+s \(background\)\n/);
    // the unit stub reports a failure had the build still been running (5 passed otherwise)
    expect(r.stdout.trim().split("\n").at(-1)).toBe("10 passed, 2 failed");
  });

  it("counts the sandbox e2e's npm test under Node.js 24 as the Node.js 24 unit pass, and does not run the suite again", () => {
    const r = ciRunWithCiliumStageFailing({ node24: true, sandboxNode24Report: true });
    expect(r.stdout).toContain("== unit tests under Node.js 24: run by the sandbox e2e's npm test, counted after the e2e suite");
    expect(r.stdout).toContain("== unit tests under Node.js 24 (the sandbox e2e's npm test): 9 passed, 0 failed");
    expect(r.unit24Ran).toBe(false);
    // 2 static + 5 unit + 9 unit under Node.js 24 + 3 e2e + 1 Node.js 24 scenario; the Cilium stage failed
    expect(r.stdout.trim().split("\n").at(-1)).toBe("20 passed, 1 failed");
  });

  it("runs the unit suite under Node.js 24 itself when the e2e suite gave no report of it", () => {
    const r = ciRunWithCiliumStageFailing({ node24: true });
    expect(r.stdout).toContain("== unit tests under Node.js 24 (the sandbox e2e gave no report of its npm test under Node.js 24)");
    expect(r.stdout).toContain("== unit tests under Node.js 24: 7 passed, 0 failed");
    expect(r.unit24Ran).toBe(true);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("18 passed, 1 failed");
  });

  it("runs the unit suite under Node.js 24 itself when the e2e suite is skipped", () => {
    const r = ciRunWithCiliumStageFailing({ node24: true, sandboxNode24Report: true, env: { UI_EXPOSURE_SKIP_E2E: "1" } });
    expect(r.stdout).not.toContain("building in the background");
    expect(r.stdout).toContain("== unit tests under Node.js 24: 7 passed, 0 failed");
    expect(r.stdout).toContain("!! e2e suite NOT run: UI_EXPOSURE_SKIP_E2E=1");
    // 2 static + 5 unit + 7 unit under Node.js 24; nothing of the e2e (so no Cilium stage either)
    expect(r.stdout.trim().split("\n").at(-1)).toBe("14 passed, 0 failed");
  });

  it("prints each e2e file's time, the longest first, and their sum", () => {
    const r = ciRunWithCiliumStageFailing();
    expect(r.stdout).toMatch(
      /== e2e suite ran in \d+s: 3 scenarios passed, 0 failed; each file:\n +46 s {2}test\/e2e\/b\.e2e\.ts {2}\(failed\)\n +12 s {2}test\/e2e\/a\.e2e\.ts\n +58 s {2}in all \(2 files\)\n/,
    );
  });

  it("counts a start-up bench that could not measure as one failure (the bench exits non-zero then)", () => {
    const r = ciRunWithCiliumStageFailing({ node24: true, bench: "fails" });
    expect(r.stdout).toContain("!! start-up figures not measured (counted as one failure)");
    // 2 static checks + 5 unit + 7 unit under Node.js 24 + 3 e2e + 1 e2e under Node.js 24 passed; the Cilium stage and the bench failed
    expect(r.stdout.trim().split("\n").at(-1)).toBe("18 passed, 2 failed");
    expect(r.status).toBe(1);
  });

  it("counts nothing for a start-up bench that measured", () => {
    const r = ciRunWithCiliumStageFailing({ node24: true, bench: "measures" });
    expect(r.stdout).not.toContain("start-up figures not measured");
    expect(r.stdout.trim().split("\n").at(-1)).toBe("18 passed, 1 failed");
  });
});

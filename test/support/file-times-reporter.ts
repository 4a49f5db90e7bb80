// Each e2e file's wall time, its hooks included (the JSON report's per-file times span its tests
// only, so a file's beforeAll, where most platforms are built, would not count), and when it
// started, in seconds from the run's start: files run two at a time (test/support/e2e-lanes.ts), so
// the suite takes its longer lane, not the sum.
// Written to test-output/e2e-files.json; .ci/run prints it and docs/e2e-toolchain.md quotes it.
import * as fs from "node:fs";
import * as path from "node:path";

type Reporter = import("vitest/node", { with: { "resolution-mode": "import" }}).Reporter;
type TestModule = import("vitest/node", { with: { "resolution-mode": "import" }}).TestModule;

export interface FileTime {
  file: string;
  seconds: number;
  state: string;
  /** Seconds from the run's start to the file's. */
  start?: number;
}

const tenths = (ms: number) => Math.round(ms / 100) / 10;

export default class FileTimesReporter implements Reporter {
  private readonly started = new Map<string, number>();
  private readonly rows: FileTime[] = [];
  private readonly runStart = Date.now();

  onTestModuleQueued(module: TestModule): void {
    this.started.set(module.moduleId, Date.now());
  }

  onTestModuleEnd(module: TestModule): void {
    const start = this.started.get(module.moduleId) ?? Date.now();
    this.rows.push({
      file: path.relative(process.cwd(), module.moduleId),
      seconds: tenths(Date.now() - start),
      state: module.state(),
      start: tenths(start - this.runStart),
    });
  }

  onTestRunEnd(): void {
    fs.mkdirSync("test-output", { recursive: true });
    fs.writeFileSync(path.join("test-output", "e2e-files.json"), `${JSON.stringify(this.rows, null, 2)}\n`);
  }
}

// Each e2e file's wall time, its hooks included (the JSON report's per-file times span its tests
// only, so a file's beforeAll, where most platforms are built, would not count). Files run one
// after the other (fileParallelism: false), so the figures add up to the suite's time.
// Written to test-output/e2e-files.json; .ci/run prints it and docs/e2e-toolchain.md quotes it.
import * as fs from "node:fs";
import * as path from "node:path";

type Reporter = import("vitest/node", { with: { "resolution-mode": "import" }}).Reporter;
type TestModule = import("vitest/node", { with: { "resolution-mode": "import" }}).TestModule;

export interface FileTime {
  file: string;
  seconds: number;
  state: string;
}

export default class FileTimesReporter implements Reporter {
  private readonly started = new Map<string, number>();
  private readonly rows: FileTime[] = [];

  onTestModuleQueued(module: TestModule): void {
    this.started.set(module.moduleId, Date.now());
  }

  onTestModuleEnd(module: TestModule): void {
    const start = this.started.get(module.moduleId) ?? Date.now();
    this.rows.push({ file: path.relative(process.cwd(), module.moduleId), seconds: Math.round((Date.now() - start) / 100) / 10, state: module.state() });
  }

  onTestRunEnd(): void {
    fs.mkdirSync("test-output", { recursive: true });
    fs.writeFileSync(path.join("test-output", "e2e-files.json"), `${JSON.stringify(this.rows, null, 2)}\n`);
  }
}

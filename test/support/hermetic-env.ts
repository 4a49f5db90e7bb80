// Every unit test file starts from this environment, never the caller's (vitest setupFiles): a
// shell prepared by `. .sandbox/env`, an operator's cluster and state credentials, or a pod's
// service account would otherwise change what the commands under test read. The suite's own
// knobs (E2E_BIN, PROMTOOL, CILIUM_REFERENCE_DIR, UPDATE_DOCS_SCREENSHOTS) are kept.
// test/hermetic-env.test.ts runs the sensitive tests in a polluted environment.

/** What the product, the Pulumi CLI, kubectl, PostgreSQL and S3 clients read from the environment. */
export const CALLER_ENV = /^(PULUMI_|KUBE|PORTAL_|EXPOSURE_|LIMA_|PG|AWS_|TEST_ASSET_)/;

for (const name of Object.keys(process.env)) if (CALLER_ENV.test(name)) delete process.env[name];

// A passing suite writes nothing to stderr of its own: a stray line (a timer that outlived its test, an unhandled
// error logged) is a defect. What a test's own process writes to stderr, or to console.error/warn, fails that test
// (or, after the last test, the file); a test that means to write there says so with allowStderr(). Empty writes and
// the "!! " lines that announce a skipped part are not counted.
import { afterAll, afterEach } from "vitest";

const written: string[] = [];
let allowed = false;
/** The running test may write to this process's stderr (a command under test that reports there). */
export function allowStderr(): void {
  allowed = true;
}
const record =
  (original: (...args: never[]) => unknown) =>
  (...args: unknown[]) => {
    const text = args.map(String).join(" ");
    // "!! ..." announces a part skipped for a missing tool (the test's title says it too).
    if (!allowed && text.trim() !== "" && !text.startsWith("!! ")) written.push(text.slice(0, 300));
    return (original as (...a: unknown[]) => unknown)(...args);
  };
process.stderr.write = record(process.stderr.write.bind(process.stderr)) as typeof process.stderr.write;
console.error = record(console.error.bind(console));
console.warn = record(console.warn.bind(console));
const check = (when: string) => {
  allowed = false;
  const lines = written.splice(0);
  if (lines.length) throw new Error(`unexpected stderr ${when}: ${lines.join(" | ")}`);
};
afterEach(() => check("during this test"));
afterAll(() => check("after the file's last test"));

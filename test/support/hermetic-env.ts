// Every unit test file starts from this environment, never the caller's (vitest setupFiles): a
// shell prepared by `. .sandbox/env`, an operator's cluster and state credentials, or a pod's
// service account would otherwise change what the commands under test read. The suite's own
// knobs (E2E_BIN, PROMTOOL, CILIUM_REFERENCE_DIR, UPDATE_DOCS_SCREENSHOTS) are kept.
// test/hermetic-env.test.ts runs the sensitive tests in a polluted environment.

/** What the product, the Pulumi CLI, kubectl, PostgreSQL and S3 clients read from the environment. */
export const CALLER_ENV = /^(PULUMI_|KUBE|PORTAL_|EXPOSURE_|LIMA_|PG|AWS_|TEST_ASSET_)/;

for (const name of Object.keys(process.env)) if (CALLER_ENV.test(name)) delete process.env[name];

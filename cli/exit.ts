/** Exit codes live with the findings they are derived from (src/core/findings.ts). */
export { EXIT } from "../src/core/findings";

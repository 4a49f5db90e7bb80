/** The exit codes of every command (the one table, in src/core/findings.ts). */
export { EXIT } from "../src/core/findings";

// Fixture of test/architecture.test.ts: a core file breaking the layers, across lines, as a regex on one line misses it.
// import { nothing } from "../adapters/not-an-import-in-a-comment";

import * as fs from "node:fs";
import {
  readIt, //
} from "../adapters/io";
import type { one } from "./a";

export const text = 'import x from "./not-an-import-in-a-string"';
export const size = (file: string): number => fs.statSync(readIt(file)).size;
export const later = async (): Promise<string> => (await import("node:path")).sep;
export type One = typeof one;

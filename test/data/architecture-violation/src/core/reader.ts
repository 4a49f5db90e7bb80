// Fixture of test/architecture.test.ts: imports two modules, calls one (a), only passes a value of the other (b) on.
import { one } from "./a";
import { two } from "./b";

export const both = [one(), two];

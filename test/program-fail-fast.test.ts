// A stack whose cluster cannot be reached fails `preview`/`up` within seconds (issue 14): no
// type checking at program start, bounded cluster reads, and an error the SDK formats cheaply.
import * as fs from "node:fs";
import * as path from "node:path";
import * as util from "node:util";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { UserError } from "../src/core/errors";
import { asRunError, PROGRAM_READ_TIMEOUT_MS } from "../src/infra/program";

const projectDir = path.resolve(__dirname, "..");

describe("failing fast when the cluster does not answer", () => {
  it("turns a user error into a RunError whose stack is its message alone (the SDK inspects it on the way out)", () => {
    let thrown: unknown;
    try {
      asRunError(new UserError("cluster unreachable: context lima-bench (https://127.0.0.1:1): ECONNREFUSED while reading services"));
    } catch (err) {
      thrown = err;
    }
    const err = thrown as Error;
    expect(err.constructor.name).toBe("RunError");
    expect(err.message).toBe("cluster unreachable: context lima-bench (https://127.0.0.1:1): ECONNREFUSED while reading services");
    expect(err.stack).toBe(`RunError: ${err.message}`);
    expect(util.inspect(err)).not.toContain("    at ");
  });

  it("bounds each cluster read of the program", () => {
    expect(PROGRAM_READ_TIMEOUT_MS).toBeLessThanOrEqual(5_000);
  });
});

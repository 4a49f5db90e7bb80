import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../cli/main";
import { FILE_LIMITS, readBoundedText } from "../src/adapters/bounded-file";
import { MAX_CONTRACT_ENTRIES, MAX_PROBLEMS_SHOWN } from "../src/core/contract/parse";
import { capture } from "./support/command-helpers";
import { contractError } from "./support/fixtures";

describe("bounded input", () => {
  it("refuses what is not a regular file (check /dev/zero ends at once, exit 2)", async () => {
    const c = capture(os.tmpdir());
    const code = await main(["check", "/dev/zero"], c.ctx);
    expect(code).toBe(2);
    expect(c.all()).toMatch(/cannot read contract .*dev\/zero: it is a device; give a regular file/);
  });

  it("refuses a contract larger than the limit, without reading it", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "big-"));
    try {
      const file = path.join(dir, "c.yaml");
      fs.writeFileSync(file, `version: 1\n#${"x".repeat(FILE_LIMITS.contract)}\n`);
      expect(() => readBoundedText(file, "contract", FILE_LIMITS.contract, 2)).toThrow(/contract .* is 1\.0 MiB: larger than the 1 MiB limit/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses text that is not UTF-8 (a UTF-16 file, invalid bytes, NUL bytes), saying so (found by an outside tester)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "encoding-"));
    try {
      const utf16 = path.join(dir, "utf16.yaml");
      fs.writeFileSync(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("version: 1\n", "utf16le")]));
      expect(() => readBoundedText(utf16, "contract", FILE_LIMITS.contract, 2)).toThrow(`contract ${utf16} is UTF-16 text: save it as UTF-8`);
      const utf32 = path.join(dir, "utf32.yaml");
      fs.writeFileSync(utf32, Buffer.from([0xff, 0xfe, 0, 0, 0x76, 0, 0, 0]));
      expect(() => readBoundedText(utf32, "contract", FILE_LIMITS.contract, 2)).toThrow(`contract ${utf32} is UTF-32 text: save it as UTF-8`);
      const noBom = path.join(dir, "utf16-no-bom.yaml");
      fs.writeFileSync(noBom, Buffer.from("version: 1\n", "utf16le"));
      expect(() => readBoundedText(noBom, "contract", FILE_LIMITS.contract, 2)).toThrow(
        `contract ${noBom} looks like UTF-16 text (a NUL byte every other byte): save it as UTF-8`,
      );
      const latin1 = path.join(dir, "latin1.yaml");
      fs.writeFileSync(latin1, Buffer.from("version: 1\n# caf\xe9\n", "latin1"));
      expect(() => readBoundedText(latin1, "contract", FILE_LIMITS.contract, 2)).toThrow(`contract ${latin1} is not UTF-8 text (line 2): save it as UTF-8`);
      const nul = path.join(dir, "nul.yaml");
      fs.writeFileSync(nul, "version: 1\n\u0000\n");
      expect(() => readBoundedText(nul, "contract", FILE_LIMITS.contract, 2)).toThrow(`contract ${nul} holds a NUL byte (line 2): it is not a text file`);
      // A UTF-8 byte order mark is still UTF-8 (and is not part of the text).
      const bom = path.join(dir, "bom.yaml");
      fs.writeFileSync(bom, "\ufeffversion: 1\n");
      expect(readBoundedText(bom, "contract", FILE_LIMITS.contract, 2)).toBe("version: 1\n");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses more entries than the limit in one problem", () => {
    const entries = Array.from({ length: MAX_CONTRACT_ENTRIES + 1 }, (_, i) => `  - {name: e${i}, service: {namespace: a, name: a, port: 1}}`).join("\n");
    const message = contractError(`version: 1\nendpoints:\n${entries}\n`);
    expect(message).toContain(`endpoints: ${MAX_CONTRACT_ENTRIES + 1} entries: a contract declares at most ${MAX_CONTRACT_ENTRIES}`);
  });

  it("shows at most the first problems and counts the rest", () => {
    const entries = Array.from({ length: 300 }, (_, i) => `  - {name: E${i}, exposed: yes}`).join("\n");
    const message = contractError(`version: 1\nendpoints:\n${entries}\n`);
    const lines = message.split("\n");
    expect(lines[0]).toMatch(/^invalid contract c\.yaml \(\d+ problems\):$/);
    expect(lines).toHaveLength(MAX_PROBLEMS_SHOWN + 2);
    expect(lines.at(-1)).toMatch(/^\.\.\. and \d+ more problems \(fix these first\)$/);
  });
});

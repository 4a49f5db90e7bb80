import * as fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { type Document, isAlias, isCollection, parseAllDocuments, stringify, visit } from "yaml";
import { parseContract } from "../src/core/contract/parse";
import { jsonRefusal, parseYamlBounded, SMALL_YAML_VALUES, YAML_MAX_DEPTH } from "../src/core/yaml";

const MiB = 2 ** 20;

describe("parseYamlBounded", () => {
  it("parses what parseDocument parses, positions included", () => {
    const r = parseYamlBounded("a: 1\nb: [x, {c: d}]\n", { maxValues: 100 }, { single: true });
    expect(r.refused).toBeUndefined();
    if (r.refused) return;
    expect(r.docs[0]?.toJS()).toEqual({ a: 1, b: ["x", { c: "d" }] });
    expect(r.lineCounter.linePos(5)).toEqual({ line: 2, col: 1 });
  });

  it("keeps every document, and reports a second one when one is expected", () => {
    const all = parseYamlBounded("a: 1\n---\nb: 2\n", { maxValues: 100 });
    expect(all.refused ? [] : all.docs.map((d) => d.toJS())).toEqual([{ a: 1 }, { b: 2 }]);
    const one = parseYamlBounded("a: 1\n---\nb: 2\n", { maxValues: 100 }, { single: true });
    expect(one.refused ? [] : one.docs[0]?.errors.map((e) => e.code)).toEqual(["MULTIPLE_DOCS"]);
  });

  it("refuses a collection or alias as a key, at its position, and never prints yaml's warning (it stringified them)", () => {
    const warn = vi.spyOn(process, "emitWarning");
    try {
      for (const text of ["a: 1\n? [x, y]\n: 2\n", "a: 1\n{b: c}: 2\n", "a: &k x\n*k : 2\n"]) {
        const r = parseYamlBounded(text, { maxValues: 100 }, { single: true });
        const errors = r.refused ? [] : (r.docs[0]?.errors ?? []);
        expect(
          errors.map((e) => [e.code, r.lineCounter.linePos(e.pos[0]).line, e.message]),
          text,
        ).toEqual([["NON_STRING_KEY", 2, "a mapping key must be a plain name, not a collection or an alias"]]);
      }
      expect(() => parseContract("version: 1\n? [endpoints]\n: []\n", "c.yaml")).toThrow(
        "c.yaml:2:3: (yaml): a mapping key must be a plain name, not a collection or an alias",
      );
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it("refuses duplicate keys as parseDocument does", () => {
    const r = parseYamlBounded("a: 1\na: 2\n", { maxValues: 100 }, { single: true });
    expect(r.refused ? [] : r.docs[0]?.errors.map((e) => e.code)).toEqual(["DUPLICATE_KEY"]);
  });

  it.each([
    ["flow sequences", (n: number) => `a: ${"[".repeat(n)}`],
    ["flow maps", (n: number) => `a: ${"{a: ".repeat(n)}`],
    ["compact block sequences", (n: number) => `${"- ".repeat(n)}x\n`],
    ["indented block maps", (n: number) => Array.from({ length: n }, (_, i) => `${" ".repeat(i)}k:`).join("\n")],
  ])("refuses %s nested deeper than the limit, at the place it goes too deep", (_, make) => {
    expect(parseYamlBounded(make(YAML_MAX_DEPTH - 5), { maxValues: SMALL_YAML_VALUES }).refused).toBeUndefined();
    const r = parseYamlBounded(make(YAML_MAX_DEPTH + 5), { maxValues: SMALL_YAML_VALUES });
    expect(r.refused?.message).toBe(`nested more than ${YAML_MAX_DEPTH} levels deep: flatten the document`);
  });

  it("refuses 6 MiB of unclosed brackets at once, in bounded memory", () => {
    const heap = process.memoryUsage().heapUsed;
    const r = parseYamlBounded(`a: ${"[".repeat(6 * MiB)}`, { maxValues: SMALL_YAML_VALUES });
    expect(r.refused?.message).toContain("nested more than");
    expect(r.lineCounter.linePos(r.refused?.offset ?? 0).line).toBe(1);
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * MiB);
  });

  it("refuses more values than allowed before building them", () => {
    const heap = process.memoryUsage().heapUsed;
    const r = parseYamlBounded(`[${"1,".repeat(3 * MiB)}]`, { maxValues: SMALL_YAML_VALUES });
    expect(r.refused?.message).toBe(`more than ${SMALL_YAML_VALUES} values: too large to read`);
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * MiB);
  });

  it("gives what parseAllDocuments gives, values and errors (and an error at each collection or alias key), on any text within the limits", () => {
    /** The keys parseYamlBounded refuses, as errors: [code, [from, to]]. */
    const complexKeys = (d: Document.Parsed) => {
      const found: [string, number[]][] = [];
      visit(d, {
        Pair(_, p) {
          const range = (p.key as { range?: number[] } | null)?.range ?? [0, 0];
          if (isCollection(p.key) || isAlias(p.key)) found.push(["NON_STRING_KEY", range.slice(0, 2)]);
        },
      });
      return found;
    };
    const same = (text: string) => {
      const bounded = parseYamlBounded(text, { maxValues: SMALL_YAML_VALUES });
      if (bounded.refused) return;
      // Warnings off: building a document with a collection key (as parseYamlBounded refuses it) warns on stderr.
      const plain = parseAllDocuments(text, { logLevel: "error" });
      const js = (d: Document.Parsed) => {
        try {
          return d.toJS({ maxAliasCount: -1 }) as unknown;
        } catch (err) {
          return `threw: ${(err as Error).message}`;
        }
      };
      const errors = (d: Document.Parsed) => d.errors.map((e) => [e.code, e.pos]);
      expect(bounded.docs.map((d) => [js(d), errors(d)])).toEqual((Array.isArray(plain) ? plain : []).map((d) => [js(d), [...errors(d), ...complexKeys(d)]]));
    };
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => same(stringify(v))),
      { numRuns: 200 },
    );
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom("[", "]", "{", "}", ":", "-", " ", "\n", "a", "'", '"', "#", ",", "&x", "*x", "---\n") }), same), {
      numRuns: 500,
    });
  });
});

describe("jsonRefusal", () => {
  it("counts brackets and separators outside strings only, escapes included", () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    expect(jsonRefusal(JSON.stringify({ a: `${deep(500)}\\"[[`, b: ["x\\", "[["] }), 10)).toBeUndefined();
    expect(jsonRefusal(deep(YAML_MAX_DEPTH), SMALL_YAML_VALUES)).toBeUndefined();
    expect(jsonRefusal(deep(YAML_MAX_DEPTH + 1), SMALL_YAML_VALUES)).toEqual({
      offset: YAML_MAX_DEPTH,
      message: `nested more than ${YAML_MAX_DEPTH} levels deep`,
    });
    expect(jsonRefusal(`[${"1,".repeat(10)}1]`, 10)).toEqual({ offset: 20, message: "more than 10 values" });
  });
});

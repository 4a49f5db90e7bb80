import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Document, parseAllDocuments, stringify } from "yaml";
import { parseYamlBounded, SMALL_YAML_VALUES, YAML_MAX_DEPTH } from "../src/core/yaml";

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

  it("gives what parseAllDocuments gives, values and errors, on any text within the limits", () => {
    const same = (text: string) => {
      const bounded = parseYamlBounded(text, { maxValues: SMALL_YAML_VALUES });
      if (bounded.refused) return;
      const plain = parseAllDocuments(text);
      const js = (d: Document.Parsed) => {
        try {
          return d.toJS({ maxAliasCount: -1 }) as unknown;
        } catch (err) {
          return `threw: ${(err as Error).message}`;
        }
      };
      const shape = (docs: readonly Document.Parsed[]) => docs.map((d) => [js(d), d.errors.map((e) => [e.code, e.pos])]);
      expect(shape(bounded.docs)).toEqual(shape(Array.isArray(plain) ? plain : []));
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

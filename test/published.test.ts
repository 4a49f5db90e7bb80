import { describe, expect, it } from "vitest";
import { PUBLISHED_TEXT_MAX, parsePublishedEndpoints } from "../src/core/published";

describe("parsePublishedEndpoints", () => {
  it("keeps what up publishes as it is", () => {
    const written = { argocd: { service: "argocd-nodeport", nodePort: 31001, url: "http://10.0.0.5:31001", uid: "0d1b8f9e-1111-2222-3333-000000000001" } };
    expect(parsePublishedEndpoints(written, "outputs")).toEqual(written);
  });

  it("escapes and cuts the texts the reports print (issue 28 #11)", () => {
    const forged = parsePublishedEndpoints(
      { a: { url: "http://x:1\nforged row", service: "s\u001b[2J", uid: "u".repeat(PUBLISHED_TEXT_MAX + 10), extra: "kept" } },
      "outputs",
    );
    expect(forged.a).toEqual({
      url: "http://x:1\\x0aforged row",
      service: "s\\x1b[2J",
      uid: `${"u".repeat(PUBLISHED_TEXT_MAX)}... (${PUBLISHED_TEXT_MAX + 10} characters)`,
      extra: "kept",
    });
  });

  it("reads the selector an up applied as label keys and values, refusing anything else by its path (issue 39 #3)", () => {
    const written = { argocd: { service: "argocd-nodeport", selector: { app: "argocd-server", "app.kubernetes.io/name": "argocd-server" } } };
    expect(parsePublishedEndpoints(written, "outputs")).toEqual(written);
    expect(() => parsePublishedEndpoints({ argocd: { selector: { app: 1 } } }, "outputs")).toThrow(
      "outputs: endpoints.argocd.selector.app: expected a string, found a number (1)",
    );
    // Longer than a label key (317: a 253-character prefix, '/', 63) or value (63) can be: no up wrote it.
    expect(() => parsePublishedEndpoints({ argocd: { selector: { app: "v".repeat(64) } } }, "outputs")).toThrow(
      "outputs: endpoints.argocd.selector.app: longer than a label value (63 characters)",
    );
    expect(() => parsePublishedEndpoints({ argocd: { selector: { ["k".repeat(318)]: "v" } } }, "outputs")).toThrow(
      "outputs: endpoints.argocd.selector: a key longer than a label key (317 characters)",
    );
    // Keys no up writes: refused, never dropped (a map built from them would lose `__proto__` without a word; outside tester).
    for (const key of ["__proto__", ""]) {
      expect(() => parsePublishedEndpoints(JSON.parse(`{"argocd":{"selector":{${JSON.stringify(key)}:{"polluted":"yes"}}}}`), "outputs"), key).toThrow(
        /^outputs: endpoints\.argocd\.selector/,
      );
      expect(() => parsePublishedEndpoints(JSON.parse(`{"argocd":{"selector":{${JSON.stringify(key)}:"v"}}}`), "outputs"), key).toThrow(
        `outputs: endpoints.argocd.selector: label key ${JSON.stringify(key)}: its name must be`,
      );
    }
  });
});

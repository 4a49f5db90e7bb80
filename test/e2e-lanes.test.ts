// The e2e suite's two lanes (test/support/e2e-lanes.ts): the order vitest hands files to its two
// workers, and how long the longer lane takes, from the measured figures.
import { describe, expect, it } from "vitest";
import { planLanes } from "./support/e2e-lanes";

const figures = { a: 300, b: 160, c: 140, d: 130, e: 50 };

describe("planLanes", () => {
  it("orders the files longest first and counts the longer lane, not the sum", () => {
    const plan = planLanes(["e", "c", "a", "d", "b"], figures);
    expect(plan.order).toEqual(["a", "b", "c", "d", "e"]);
    // each next file goes to the lane that frees first (the first lane on a tie): a | b, c; d
    // after a (both free at 300 s), e after c
    expect(plan.lanes).toEqual([
      ["a", "d"],
      ["b", "c", "e"],
    ]);
    expect(plan.seconds).toBe(430);
    expect(plan.unmeasured).toEqual([]);
  });

  it("counts a file with no figure as the longest measured one, and names it", () => {
    const plan = planLanes(["a", "new", "b"], figures);
    expect(plan.unmeasured).toEqual(["new"]);
    expect(plan.lanes).toEqual([["a", "b"], ["new"]]);
    expect(plan.seconds).toBe(460);
  });

  it("takes files by path too, and breaks ties by name so the order is stable", () => {
    const plan = planLanes(["test/e2e/y.e2e.ts", "test/e2e/x.e2e.ts"], { x: 10, y: 10 });
    expect(plan.order).toEqual(["test/e2e/x.e2e.ts", "test/e2e/y.e2e.ts"]);
    expect(plan.seconds).toBe(10);
  });

  it("with one lane, is the sum", () => {
    expect(planLanes(Object.keys(figures), figures, 1).seconds).toBe(780);
  });
});

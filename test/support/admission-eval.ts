// Evaluates the exposure guard's generated policy on one admission request with a maintained CEL
// implementation (@marcbachmann/cel-js), as the API server does: variables are evaluated lazily,
// on first use, and the request is denied when a validation is false.
import type { PolicySpec } from "../../src/core/admission";

type CelJs = typeof import("@marcbachmann/cel-js", { with: { "resolution-mode": "import" }});
let lib: CelJs | undefined;

export interface AdmissionRequest {
  kind: string;
  namespace: string;
  operation: "CREATE" | "UPDATE";
  object: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
}

/** The messages of the validations the request fails (empty: admitted). */
export async function policyRefusals(spec: PolicySpec, req: AdmissionRequest): Promise<string[]> {
  lib ??= await import("@marcbachmann/cel-js");
  const { evaluate } = lib;
  const variables: Record<string, unknown> = {};
  const ctx = {
    object: req.object,
    oldObject: req.oldObject ?? null,
    request: { kind: { kind: req.kind }, namespace: req.namespace, operation: req.operation, dryRun: req.dryRun ?? false },
    variables,
  };
  for (const v of spec.variables) {
    let cached: { value: unknown } | undefined;
    Object.defineProperty(variables, v.name, {
      enumerable: true,
      get: () => {
        cached ??= { value: evaluate(v.expression, ctx) };
        return cached.value;
      },
    });
  }
  return spec.validations.filter((v) => evaluate(v.expression, ctx) === false).map((v) => String(evaluate(v.messageExpression, ctx)));
}

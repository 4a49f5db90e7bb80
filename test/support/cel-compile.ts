// Compiles the admission policy's CEL with a maintained CEL implementation (@marcbachmann/cel-js),
// so a generated expression that does not parse or type-check fails the unit tests, not the
// API server. `object`, `oldObject` and `request` are dyn (the API server types them from the
// matched kinds' schemas: that check is its own, read back by `up` from the policy's status);
// each variable is typed from its own compiled expression, in order, as the API server does.
// The library parses the strings extension's join() and the list macros we emit. It accepts an
// integer literal beyond int64 (cel-go refuses it): checked here separately.
import type { PolicySpec } from "../../src/core/admission";

// An ES module: loaded by a dynamic import from this CommonJS test code.
type CelJs = typeof import("@marcbachmann/cel-js", { with: { "resolution-mode": "import" }});
let lib: CelJs | undefined;

const INT64_MAX = 2n ** 63n - 1n;

/** Integer literals of an expression outside int64 (outside strings). */
function oversizedIntegers(expression: string): string[] {
  const withoutStrings = expression.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, "''");
  return (withoutStrings.match(/(?<![\w.])\d+(?![\w.])/g) ?? []).filter((n) => BigInt(n) > INT64_MAX);
}

/** The problems of a policy's expressions, as "<field>: <message>"; empty when all compile. */
export async function celProblems(spec: PolicySpec): Promise<string[]> {
  lib ??= await import("@marcbachmann/cel-js");
  const { Environment } = lib;
  const problems: string[] = [];
  const fields: Record<string, string> = {};
  const check = (field: string, expression: string, variables: Record<string, string>): string | undefined => {
    for (const n of oversizedIntegers(expression)) problems.push(`${field}: integer literal ${n} is beyond int64`);
    const env = new Environment({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false });
    env.registerVariable("object", "dyn").registerVariable("oldObject", "dyn").registerVariable("request", "dyn");
    if (Object.keys(variables).length) env.registerType("Variables", { fields: variables });
    env.registerVariable("variables", Object.keys(variables).length ? "Variables" : "map");
    try {
      const result = env.check(expression);
      if (!result.valid) {
        problems.push(`${field}: ${result.error?.message.split("\n")[0]}`);
        return undefined;
      }
      return result.type;
    } catch (err) {
      problems.push(`${field}: ${(err as Error).message.split("\n")[0]}`);
      return undefined;
    }
  };
  spec.variables.forEach((v, i) => {
    const type = check(`spec.variables[${i}] (${v.name})`, v.expression, { ...fields });
    fields[v.name] = type && !/\b[A-Z]\b/.test(type) ? type : "dyn";
  });
  spec.validations.forEach((v, i) => {
    const t = check(`spec.validations[${i}].expression`, v.expression, fields);
    if (t && t !== "bool" && t !== "dyn") problems.push(`spec.validations[${i}].expression: is ${t}, not bool`);
    const m = check(`spec.validations[${i}].messageExpression`, v.messageExpression, fields);
    if (m && m !== "string" && m !== "dyn") problems.push(`spec.validations[${i}].messageExpression: is ${m}, not string`);
  });
  return problems;
}

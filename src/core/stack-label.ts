// The stack label on our Services (STACK_LABEL): read back only to say, in a refusal, which
// ui-exposure stack publishes a Service. Ownership is never decided by it.
import { isStackName } from "./inputs";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, type Service, STACK_LABEL } from "./kube/types";
import type { NodePortPlan } from "./plan";

/** The stack a Service is labelled as published by (a stack name, else undefined: the label is untrusted). */
export function labelledStack(service: Pick<Service, "metadata">): string | undefined {
  const labels = service.metadata.labels;
  const stack = labels?.[STACK_LABEL];
  return labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE && typeof stack === "string" && isStackName(stack) ? stack : undefined;
}

/**
 * Why `stack` cannot create the Service of an entry that another ui-exposure stack (`holder`,
 * from the label) publishes: one NodePort Service per entry and cluster. What to do is to choose
 * which stack publishes it, not to delete that stack's Service.
 */
export function publishedByAnotherStack(plan: Pick<NodePortPlan, "entry" | "namespace" | "serviceName">, stack: string, holder: string): string {
  return (
    `entry '${plan.entry}': Service ${plan.namespace}/${plan.serviceName} is labelled as published by ui-exposure stack '${holder}', and stack '${stack}' did not create it; ` +
    `one stack publishes an entry in a cluster. Drop '${plan.entry}' from ui-exposure:entries of stack '${stack}', ` +
    `or first drop it from stack '${holder}' (its ui-exposure:entries, then pulumi up --stack ${holder}); never delete another stack's Service by hand`
  );
}

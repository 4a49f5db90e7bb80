// Names written once, for every part that needs them (the planner, the live verdicts, the
// program's refusals, the Cilium adoption): the resource types `pulumi import` takes, the
// command that adopts an object on purpose, and the name of the port our Services publish.

export const SERVICE_TYPE = "kubernetes:core/v1:Service";
export const CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap";
export const RELEASE_TYPE = "kubernetes:helm.sh/v3:Release";

/**
 * The exact command that adopts an existing object into a stack on purpose: `id` is
 * `<namespace>/<name>`. Without these flags the CLI stops at a prompt, writes code and
 * protects the resource.
 */
export function importCommand(type: string, resourceName: string, id: string, stack?: string): string {
  return `pulumi import ${type} ${resourceName} ${id}${stack ? ` --stack ${stack}` : ""} --generate-code=false --protect=false --yes`;
}

/** The name of the one port of a Service this project creates for an entry: its URL's scheme. */
export function servicePortName(scheme: string | undefined): "http" | "https" {
  return scheme === "https" ? "https" : "http";
}

// Adopting a Cilium release a script installed: without it the first `up` fails ("cannot re-use a name that is still in use"). pulumi-kubernetes
// replaces a Release only when `name` or `namespace` change: the component always sets both, so the first `up` after the import is a `helm upgrade`.
import { importCommand } from "../ownership";

/** Resource type of the Release, as `pulumi import` wants it. */
export const RELEASE_TYPE = "kubernetes:helm.sh/v3:Release";

/** The Pulumi name of the Release inside the Cilium component named `component`. */
export const releaseResourceName = (component: string): string => `${component}-release`;

/** Imports at the stack's root (`pulumi import` cannot create the component parent); the component aliases that URN: the next up moves it, not replaces it. */
export function releaseImportCommand(component: string, release: { namespace: string; releaseName: string }): string {
  return importCommand(RELEASE_TYPE, releaseResourceName(component), `${release.namespace}/${release.releaseName}`);
}

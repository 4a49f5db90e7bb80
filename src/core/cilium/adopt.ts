/**
 * Adopting a Cilium release that a script installed with `helm install` (bench built by cni.sh, dirqual phase 2). Without adoption the first `up` tries `helm
 * install` again and fails ("cannot re-use a name that is still in use"); with any other release name it would install a second Cilium next to the first.
 *
 * How pulumi-kubernetes (4.x, provider/pkg/provider/helm_release.go) behaves, which is what the component relies on:
 * - Import id is `<namespace>/<release name>`; Read fills the state from the live release (chart name, version, user-supplied values), with no repository (Helm
 * does not record it).
 * - Diff forces a replacement only when `name` or `namespace` change; chart, version, repositoryOpts and values are an in-place update (`helm upgrade`).
 * - A Release without `name` is auto-named `<resource name>-<hex>`: a second release. So the component always sets `name` and `namespace` to the adopted
 * release's, and the first `up` after the import is an in-place upgrade.
 */

import { importCommand } from "../ownership";

/** Resource type of the Release, as `pulumi import` wants it. */
export const RELEASE_TYPE = "kubernetes:helm.sh/v3:Release";

/** The Pulumi name of the Release inside the Cilium component named `component`. */
export function releaseResourceName(component: string): string {
  return `${component}-release`;
}

/**
 * The command that adopts the release. It imports at the stack's root (plain `pulumi import` cannot create the component parent); the component declares an
 * alias for that root URN, so the next `up` moves it under the component instead of deleting and re-creating it.
 */
export function releaseImportCommand(component: string, release: { namespace: string; releaseName: string }): string {
  return importCommand(RELEASE_TYPE, releaseResourceName(component), `${release.namespace}/${release.releaseName}`);
}

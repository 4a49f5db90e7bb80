import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { stringify } from "yaml";
import type { PortalBundle } from "../src/adapters/portal-bundle";
import type { Contract } from "../src/core/contract/schema";
import { STACK_LABEL } from "../src/core/kube/types";
import {
  PORTAL_APP_DIR,
  PORTAL_CONTAINER_PORT,
  PORTAL_ENV,
  PORTAL_FILES,
  PORTAL_LABELS,
  PORTAL_PORT_NAME,
  PORTAL_PUBLISHED,
  PORTAL_SELECTOR,
  PORTAL_UID,
  portalRbacRules,
  portalSecretRules,
  portalService,
  selectsHostPort,
} from "../src/core/portal/spec";
import type { Allowlist, PortalSettings, Settings } from "../src/core/settings";
import { fixedNameService, kubernetesProviderOf, refuseTakeover } from "./kubernetes-provider";

export interface PortalArgs {
  /** The server bundle, built by the program before any resource is declared (it can fail). */
  bundle: PortalBundle;
  settings: PortalSettings;
  /** The parsed contract: shipped as YAML next to the server, so the pod reads what `up` validated. */
  contract: Contract;
  /** The stack's selection (`ui-exposure:entries`), so the portal shows what the stack publishes. */
  entries: Settings["entries"];
  nodeAddress?: string;
  stack: string;
  /** The stack's kubernetes:context, the cluster's name on the portal's /metrics. */
  cluster: string;
  /** Why creating the namespace, or the Service `portal`, would take over one (src/core/ownership.ts); refused by the takeover hook. */
  namespaceRefusal?: string;
  serviceRefusal?: string;
  /** Monitoring on: the stack's allowlist, so the portal runs the audit for /metrics (and may list Pods). */
  audit?: Allowlist;
}

/** The portal in the cluster (docs/portal.md): this project's server in a stock Node.js image, RBAC to list what a page load reads, a Service `portal`. */
export class Portal extends pulumi.ComponentResource {
  public readonly namespace: pulumi.Output<string>;

  constructor(name: string, args: PortalArgs, opts?: pulumi.ComponentResourceOptions) {
    // Recorded inputs: what defines the portal, not what was observed (the refusals), nor the bundle (0.5 MB of gzip has no place in the state).
    const { namespaceRefusal, serviceRefusal, bundle, ...recorded } = args;
    super("ui-exposure:portal:Portal", name, recorded, opts);
    const { settings } = args;
    const provider = kubernetesProviderOf(opts, `Portal ${name}`);
    // Only where `up` would otherwise wait on pods that can never start (no kubelet).
    const awaitAnnotations = settings.skipAwait ? { "pulumi.com/skipAwait": "true" } : undefined;

    const ns = settings.createNamespace
      ? new k8s.core.v1.Namespace(
          `${name}-ns`,
          // A fixed name: the contract's `portal` entry names this namespace.
          { metadata: { name: settings.namespace, labels: { ...PORTAL_LABELS } } },
          {
            parent: this,
            provider,
            // Others may put objects in it: neither `destroy` nor turning createNamespace off ever deletes it (and all in it); remove it by hand once empty.
            retainOnDelete: true,
            ...refuseTakeover(`${name}-ns`, namespaceRefusal),
          },
        )
      : undefined;
    // Through the Namespace output, so every namespaced child waits for it when it is created here.
    this.namespace = ns ? ns.metadata.name : pulumi.output(settings.namespace);
    const namespace = this.namespace;

    const account = new k8s.core.v1.ServiceAccount(`${name}-sa`, { metadata: { namespace, labels: { ...PORTAL_LABELS } } }, { parent: this, provider });
    const subjects = [{ kind: "ServiceAccount", name: account.metadata.name, namespace }];
    const roleRef = (kind: string, name: pulumi.Output<string>) => ({ apiGroup: "rbac.authorization.k8s.io", kind, name });

    const rules = portalRbacRules({ hostPort: selectsHostPort(args.contract, args.entries), audit: args.audit !== undefined });
    const clusterRole = new k8s.rbac.v1.ClusterRole(`${name}-reader`, { metadata: { labels: { ...PORTAL_LABELS } }, rules }, { parent: this, provider });
    const bindings: pulumi.Resource[] = [
      new k8s.rbac.v1.ClusterRoleBinding(
        `${name}-reader`,
        { metadata: { labels: { ...PORTAL_LABELS } }, roleRef: roleRef("ClusterRole", clusterRole.metadata.name), subjects },
        { parent: this, provider },
      ),
    ];
    // The other clusters' Secrets: `get` on exactly their names, in this namespace only.
    if (settings.clusters.length) {
      const roleArgs = { metadata: { namespace, labels: { ...PORTAL_LABELS } }, rules: portalSecretRules(settings.clusters.map((c) => c.secret)) };
      const role = new k8s.rbac.v1.Role(`${name}-secrets`, roleArgs, { parent: this, provider });
      const bindingArgs = { metadata: { namespace, labels: { ...PORTAL_LABELS } }, roleRef: roleRef("Role", role.metadata.name), subjects };
      bindings.push(new k8s.rbac.v1.RoleBinding(`${name}-secrets`, bindingArgs, { parent: this, provider }));
    }

    // Auto-named: a new bundle or contract makes a new ConfigMap, hence a new pod template and a rollout.
    const code = new k8s.core.v1.ConfigMap(
      `${name}-code`,
      {
        metadata: { namespace, labels: { ...PORTAL_LABELS }, annotations: { "ui-exposure.io/bundle-sha256": bundle.sha256 } },
        data: { [PORTAL_FILES.loader]: bundle.loader, [PORTAL_FILES.contract]: stringify(args.contract, { lineWidth: 0 }) },
        binaryData: { [PORTAL_FILES.bundle]: bundle.gzipped.toString("base64") },
      },
      { parent: this, provider },
    );

    const env = [
      { name: PORTAL_ENV.listen, value: `0.0.0.0:${PORTAL_CONTAINER_PORT}` },
      { name: PORTAL_ENV.contract, value: `${PORTAL_APP_DIR}/${PORTAL_FILES.contract}` },
      { name: PORTAL_ENV.entries, value: JSON.stringify(args.entries) },
      { name: PORTAL_ENV.stack, value: args.stack },
      { name: PORTAL_ENV.cluster, value: args.cluster },
      { name: PORTAL_ENV.inCluster, value: "1" },
      ...(args.nodeAddress ? [{ name: PORTAL_ENV.nodeAddress, value: args.nodeAddress }] : []),
      { name: PORTAL_ENV.published, value: `${PORTAL_PUBLISHED.dir}/${PORTAL_PUBLISHED.file}` },
      { name: PORTAL_ENV.version, value: bundle.version },
      ...(settings.clusters.length
        ? [{ name: PORTAL_ENV.clusters, value: JSON.stringify({ namespace: settings.namespace, clusters: settings.clusters }) }]
        : []),
      ...(args.audit ? [{ name: PORTAL_ENV.allowlist, value: JSON.stringify({ services: args.audit.services, hostPorts: args.audit.hostPorts }) }] : []),
    ];
    const probe = { httpGet: { path: "/healthz", port: PORTAL_PORT_NAME }, timeoutSeconds: 2 };

    const deployment = new k8s.apps.v1.Deployment(
      `${name}-deployment`,
      {
        metadata: { namespace, labels: { ...PORTAL_LABELS }, ...(awaitAnnotations ? { annotations: awaitAnnotations } : {}) },
        spec: {
          replicas: 1,
          revisionHistoryLimit: 3,
          selector: { matchLabels: { ...PORTAL_SELECTOR } },
          template: {
            metadata: { labels: { ...PORTAL_LABELS } },
            spec: {
              serviceAccountName: account.metadata.name,
              automountServiceAccountToken: true,
              securityContext: { runAsNonRoot: true, runAsUser: PORTAL_UID, runAsGroup: PORTAL_UID, seccompProfile: { type: "RuntimeDefault" } },
              containers: [
                {
                  name: "portal",
                  image: settings.image,
                  command: ["node", `${PORTAL_APP_DIR}/${PORTAL_FILES.loader}`],
                  ports: [{ name: PORTAL_PORT_NAME, containerPort: PORTAL_CONTAINER_PORT, protocol: "TCP" }],
                  env,
                  readinessProbe: { ...probe, periodSeconds: 10 },
                  // /healthz never calls the cluster: an API outage shows on the page, it does not restart the pod.
                  livenessProbe: { ...probe, initialDelaySeconds: 10, periodSeconds: 20, failureThreshold: 3 },
                  resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "256Mi" } },
                  securityContext: {
                    runAsNonRoot: true,
                    readOnlyRootFilesystem: true,
                    allowPrivilegeEscalation: false,
                    capabilities: { drop: ["ALL"] },
                  },
                  volumeMounts: [
                    { name: "code", mountPath: PORTAL_APP_DIR, readOnly: true },
                    { name: "published", mountPath: PORTAL_PUBLISHED.dir, readOnly: true },
                  ],
                },
              ],
              volumes: [
                { name: "code", configMap: { name: code.metadata.name } },
                // Written by publish() at the end of `up`; optional, so the pod starts before it exists.
                { name: "published", configMap: { name: PORTAL_PUBLISHED.configMap, optional: true } },
              ],
            },
          },
        },
      },
      // The pod's API calls are refused until the binding exists.
      { parent: this, provider, dependsOn: bindings },
    );

    const spec = portalService(settings.namespace);
    const service = new k8s.core.v1.Service(
      `${name}-svc`,
      {
        // A fixed name from src/core/portal/spec.ts: the contract's `portal` entry mirrors it, the planner read this same spec before it existed. patchForce:
        // this Service is this stack's alone; adopted (pulumi import) or edited by hand, `up` takes its fields back instead of failing on an apply conflict.
        metadata: {
          name: spec.metadata.name,
          namespace,
          labels: { ...spec.metadata.labels, [STACK_LABEL]: args.stack },
          annotations: { ...awaitAnnotations, "pulumi.com/patchForce": "true" },
        },
        spec: spec.spec,
      },
      { parent: this, provider, ...fixedNameService(`${name}-svc`, serviceRefusal) },
    );

    this.registerOutputs({ namespace: this.namespace, service, deployment, clusterRole, bundleSha256: bundle.sha256 });
  }
}

/**
 * Writes this `up`'s `endpoints` output where the pod reads it (PORTAL_PUBLISHED), so a nodePort moved by hand since is DRIFT on the page too. Not a child of
 * the Portal: it waits for the published Services, one of which (the portal's own NodePort Service) waits for the whole Portal.
 */
export function portalPublished(
  name: string,
  args: { portal: Portal; endpoints: pulumi.Input<Record<string, unknown>>; refusal: string | undefined },
  opts?: pulumi.CustomResourceOptions,
): k8s.core.v1.ConfigMap {
  return new k8s.core.v1.ConfigMap(
    name,
    {
      metadata: { name: PORTAL_PUBLISHED.configMap, namespace: args.portal.namespace, labels: { ...PORTAL_LABELS } },
      data: { [PORTAL_PUBLISHED.file]: pulumi.output(args.endpoints).apply((e) => JSON.stringify(e)) },
    },
    // A fixed name (the Deployment names it): a replacement deletes first.
    { ...opts, deleteBeforeReplace: true, ...refuseTakeover(name, args.refusal) },
  );
}

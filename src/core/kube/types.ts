/**
 * The subset of Kubernetes objects ui-exposure reads. Plain data (what `kubectl get -o yaml`
 * and the API return), so the same pure functions work on a live list call, a snapshot
 * file and a test fixture.
 */
interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  uid?: string;
}

interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface ServicePort {
  name?: string;
  port: number;
  protocol?: string;
  targetPort?: number | string;
  nodePort?: number;
}

export interface Service extends KubeObject {
  spec?: {
    type?: string;
    selector?: Record<string, string>;
    ports?: ServicePort[];
    clusterIP?: string;
    externalTrafficPolicy?: string;
    loadBalancerClass?: string;
  };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}

export interface Node extends KubeObject {
  spec?: { unschedulable?: boolean };
  status?: {
    addresses?: { type: string; address: string }[];
    conditions?: { type: string; status: string }[];
  };
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
  protocol?: string;
}

export interface Pod extends KubeObject {
  spec?: {
    nodeName?: string;
    containers?: { name: string; ports?: ContainerPort[] }[];
    initContainers?: { name: string; ports?: ContainerPort[] }[];
  };
  status?: { phase?: string; podIP?: string; hostIP?: string; conditions?: { type: string; status: string }[] };
}

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

export interface EndpointSlice extends KubeObject {
  endpoints?: { addresses: string[]; conditions?: { ready?: boolean; serving?: boolean } }[] | null;
  ports?: { name?: string; port?: number }[];
}

/** A Secret as the API returns it: `data` values are base64 (read only by `exposure access`). */
export interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** Any other object (CiliumLoadBalancerIPPool, Gateway, HTTPRoute...). */
export interface GenericObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY_VALUE = "ui-exposure";
export const ENTRY_LABEL = "ui-exposure.io/entry";
/**
 * The stack whose `up` created a Service: named in a refusal, so the operator knows whom to ask.
 * Never proof of ownership (anyone can copy a label): that is the stack's state.
 */
export const STACK_LABEL = "ui-exposure.io/stack";
export const MIRRORS_ANNOTATION = "ui-exposure.io/mirrors";

// The Kubernetes objects ui-exposure reads, typed from validate.ts's schemas: plain data (what `kubectl get -o yaml` and the API return), so the same pure
// functions work on a live list, a snapshot file and a test fixture.
export type { ConfigMap, ContainerPort, EndpointSlice, GenericObject, Node, Pod, Secret, Service, ServicePort } from "./validate";

export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY_VALUE = "ui-exposure";
export const ENTRY_LABEL = "ui-exposure.io/entry";
// The stack whose `up` created an entry's NodePort Service or the portal's Service, named in a refusal (whom to ask). Never proof of ownership (anyone can
// copy a label): that is the uid the last up published (src/core/ownership.ts).
export const STACK_LABEL = "ui-exposure.io/stack";
export const MIRRORS_ANNOTATION = "ui-exposure.io/mirrors";

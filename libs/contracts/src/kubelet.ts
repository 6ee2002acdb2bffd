// The kubelet's gRPC APIs, generated from proto/k8s: the device plugin API (package v1beta1) and
// the pod-resources API (package v1). One namespace per package, as their names overlap
// (TopologyInfo, NUMANode, CDIDevice). Only the node agent loads these.
export * as deviceplugin from './generated/k8s/deviceplugin/v1beta1/api';
export * as podresources from './generated/k8s/podresources/v1/api';

/** The device plugin API version the kubelet expects in RegisterRequest.version. */
export const DEVICE_PLUGIN_API_VERSION = 'v1beta1';
/** Device.health values. */
export const DEVICE_HEALTHY = 'Healthy';
export const DEVICE_UNHEALTHY = 'Unhealthy';
/** The kubelet's socket file name, in the device-plugins dir and in the pod-resources dir. */
export const KUBELET_SOCKET = 'kubelet.sock';

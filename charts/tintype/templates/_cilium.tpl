{{/*
Whether the controller reaches the API server through a CiliumNetworkPolicy (toEntities:
kube-apiserver): asked for (networkPolicy.apiServer.cilium), and the cluster serves cilium.io/v2.
*/}}
{{- define "tintype.ciliumApiServer" -}}
{{- $np := .Values.networkPolicy -}}
{{- if and $np.enabled .Values.controller.enabled $np.apiServer.cilium (.Capabilities.APIVersions.Has "cilium.io/v2/CiliumNetworkPolicy") }}true{{ end -}}
{{- end -}}

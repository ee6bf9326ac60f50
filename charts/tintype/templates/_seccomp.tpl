{{/*
The browser container's Localhost seccomp profile (docs/helm.md, "Cluster add-ons"): delivered by the Security Profiles Operator where the cluster serves its
SeccompProfile API and renderer.browser.seccompProfile.operator.enabled is on, else the file the
operator of the cluster installed on the nodes (localhostProfile).
*/}}
{{- define "tintype.seccompOperator" -}}
{{- $b := .Values.renderer.browser.seccompProfile -}}
{{- if and (eq $b.type "Localhost") $b.operator.enabled (.Capabilities.APIVersions.Has "security-profiles-operator.x-k8s.io/v1/SeccompProfile") }}true{{ end -}}
{{- end -}}

{{/* The SeccompProfile's name: cluster-wide, so the namespace and the release are in it. */}}
{{- define "tintype.seccompProfileName" -}}
{{- printf "%s-%s" .Release.Namespace (include "tintype.name" (dict "root" . "role" "chromium")) | trunc 58 | trimSuffix "-" -}}
{{- end -}}

{{/* The path under the kubelet's seccomp directory: where the operator writes it, or localhostProfile. */}}
{{- define "tintype.browserSeccompPath" -}}
{{- if include "tintype.seccompOperator" . -}}
{{- printf "operator/%s.json" (include "tintype.seccompProfileName" .) -}}
{{- else -}}
{{- required "renderer.browser.seccompProfile.localhostProfile: the profile's path under the kubelet's seccomp directory" .Values.renderer.browser.seccompProfile.localhostProfile -}}
{{- end -}}
{{- end -}}

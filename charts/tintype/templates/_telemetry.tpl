{{- /* OpenTelemetry: the collector, for Envoy, the roles and the NetworkPolicies (docs/operations.md "Telemetry"). */ -}}

{{/*
The collector's host, port and scheme, from telemetry.otlpEndpoint (http[s]://host[:port]); without
a port, the scheme's (80, 443).
*/}}
{{- define "tintype.collectorHost" -}}
{{- (split ":" (urlParse .Values.telemetry.otlpEndpoint).host)._0 -}}
{{- end -}}
{{/* The traces URL, as the roles make it (lib/telemetry.ts): the endpoint is a base (a path kept), …/v1/traces used as is. */}}
{{- define "tintype.collectorTracesUrl" -}}
{{- $e := trimSuffix "/" .Values.telemetry.otlpEndpoint -}}
{{- if hasSuffix "/v1/traces" $e }}{{ $e }}{{ else }}{{ printf "%s/v1/traces" $e }}{{ end -}}
{{- end -}}
{{- define "tintype.collectorTls" -}}
{{- if eq (urlParse .Values.telemetry.otlpEndpoint).scheme "https" }}true{{ end -}}
{{- end -}}
{{- define "tintype.collectorPort" -}}
{{- $port := (split ":" (urlParse .Values.telemetry.otlpEndpoint).host)._1 -}}
{{- if $port }}{{ $port }}{{ else }}{{ ternary "443" "80" (eq (include "tintype.collectorTls" .) "true") }}{{ end -}}
{{- end -}}

{{/* Egress to the OpenTelemetry collector, when tracing is on: its pods, or its address ranges (one outside the cluster). */}}
{{- define "tintype.collectorEgress" -}}
{{- if .Values.telemetry.otlpEndpoint -}}
- ports: [{ port: {{ include "tintype.collectorPort" . }}, protocol: TCP }]
  to:
    {{- include "tintype.peerOrCidrs" .Values.telemetry.collectorPeer | nindent 4 }}
{{- end -}}
{{- end -}}


{{/*
What a tracing role (policy, the renderer) is given beyond OTEL_EXPORTER_OTLP_ENDPOINT: the
headers from telemetry.headersSecret and the CA of telemetry.caSecret (lib/telemetry.ts).
*/}}
{{- define "tintype.otlpEnv" -}}
{{- $t := .Values.telemetry -}}
{{- if $t.otlpEndpoint -}}
{{- with $t.headersSecret.name }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef: { name: {{ . }}, key: {{ $t.headersSecret.key }} }
{{- end }}
{{- if $t.caSecret.name }}
- { name: OTEL_EXPORTER_OTLP_CERTIFICATE, value: {{ printf "/etc/tintype/otel-ca/%s" $t.caSecret.key | quote }} }
{{- end }}
{{- end -}}
{{- end -}}

{{/* The collector's CA (telemetry.caSecret), mounted read-only at /etc/tintype/otel-ca. */}}
{{- define "tintype.otlpCaMount" -}}
{{- if and .Values.telemetry.otlpEndpoint .Values.telemetry.caSecret.name }}
- { name: otel-ca, mountPath: /etc/tintype/otel-ca, readOnly: true }
{{- end -}}
{{- end -}}
{{- define "tintype.otlpCaVolume" -}}
{{- if and .Values.telemetry.otlpEndpoint .Values.telemetry.caSecret.name }}
- name: otel-ca
  secret:
    secretName: {{ .Values.telemetry.caSecret.name }}
    items: [{ key: {{ .Values.telemetry.caSecret.key }}, path: {{ .Values.telemetry.caSecret.key }} }]
{{- end -}}
{{- end -}}

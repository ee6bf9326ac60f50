{{/* Names: <release>-<role>, or <fullnameOverride>-<role>. */}}
{{- define "tintype.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "tintype.name" -}}
{{- printf "%s-%s" (include "tintype.fullname" .root) .role -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "tintype.labels" -}}
app.kubernetes.io/name: tintype
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tintype
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The labels that select one role's pods (never change once installed). */}}
{{- define "tintype.selector" -}}
app.kubernetes.io/name: tintype
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "tintype.roleLabels" -}}
{{ include "tintype.labels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{/* The tintype image, by digest when one is given. */}}
{{- define "tintype.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The browser container's image (Chromium, fonts, the launcher), by digest when one is given. */}}
{{- define "tintype.browserImage" -}}
{{- $i := .Values.renderer.browser.image -}}
{{- $tag := default .Chart.AppVersion $i.tag -}}
{{- if $i.digest -}}
{{- printf "%s:%s@%s" $i.repository $tag $i.digest -}}
{{- else -}}
{{- printf "%s:%s" $i.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "tintype.envoyImage" -}}
{{- $i := .Values.envoy.image -}}
{{- if $i.digest -}}
{{- printf "%s:%s@%s" $i.repository $i.tag $i.digest -}}
{{- else -}}
{{- printf "%s:%s" $i.repository $i.tag -}}
{{- end -}}
{{- end -}}

{{/* The Secret that holds DATABASE_URL, REDIS_URL and TINTYPE_LEASE_SECRET. */}}
{{- define "tintype.secretName" -}}
{{- if .Values.secrets.existingSecret -}}
{{- .Values.secrets.existingSecret -}}
{{- else -}}
{{- include "tintype.name" (dict "root" . "role" "env") -}}
{{- end -}}
{{- end -}}

{{- define "tintype.tlsSecretName" -}}
{{- if .Values.tls.existingSecret -}}
{{- .Values.tls.existingSecret -}}
{{- else -}}
{{- include "tintype.name" (dict "root" . "role" "tls") -}}
{{- end -}}
{{- end -}}

{{/* One variable of the tintype Secret. */}}
{{- define "tintype.secretEnv" -}}
- name: {{ .key }}
  valueFrom:
    secretKeyRef:
      name: {{ include "tintype.secretName" .root }}
      key: {{ .key }}
{{- end -}}

{{/* Variables every tintype role reads. */}}
{{- define "tintype.commonEnv" -}}
- name: TINTYPE_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: TINTYPE_RENDER_TIMEOUT_MS
  value: {{ .Values.renderBudgetMs | int64 | toString | quote }}
{{- if .Values.telemetry.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .Values.telemetry.otlpEndpoint | quote }}
{{- end }}
{{- end -}}

{{/*
Pod Security `restricted`: non-root, no privilege escalation, every capability dropped,
RuntimeDefault seccomp, read-only root. Shared by every pod and container of the release.
*/}}
{{- define "tintype.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
fsGroup: {{ .uid }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "tintype.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Seconds a pod gets to finish its renders after SIGTERM: the budget, the edge's margin and 10 s. */}}
{{- define "tintype.gracePeriod" -}}
{{- add (div .Values.renderBudgetMs 1000) .Values.edgeMarginSeconds 10 -}}
{{- end -}}

{{/* Probes on a role's admin port. */}}
{{- define "tintype.probes" -}}
startupProbe:
  httpGet: { path: /healthz/live, port: {{ .port }} }
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet: { path: /healthz/live, port: {{ .port }} }
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet: { path: /healthz/ready, port: {{ .port }} }
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
{{- end -}}

{{/* Refuses a release the chart cannot run. */}}
{{- define "tintype.validate" -}}
{{- $s := .Values.secrets -}}
{{- if $s.existingSecret -}}
{{- if or $s.databaseUrl $s.redisUrl $s.leaseSecret -}}
{{- fail "secrets.existingSecret is set: leave secrets.databaseUrl, secrets.redisUrl and secrets.leaseSecret empty (they belong in that Secret)" -}}
{{- end -}}
{{- else -}}
{{- if not (and $s.databaseUrl $s.redisUrl $s.leaseSecret) -}}
{{- fail "set secrets.existingSecret, or all of secrets.databaseUrl, secrets.redisUrl and secrets.leaseSecret" -}}
{{- end -}}
{{- end -}}
{{- if .Values.envoy.enabled -}}
{{- if and (not .Values.tls.existingSecret) (not (and .Values.tls.certificate .Values.tls.key)) -}}
{{- fail "envoy needs a certificate: set tls.existingSecret, or tls.certificate and tls.key" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The collector's host and port, from telemetry.otlpEndpoint (http://host:port). */}}
{{- define "tintype.collectorHost" -}}
{{- (split ":" (urlParse .Values.telemetry.otlpEndpoint).host)._0 -}}
{{- end -}}
{{- define "tintype.collectorPort" -}}
{{- (split ":" (urlParse .Values.telemetry.otlpEndpoint).host)._1 -}}
{{- end -}}

{{/* A NetworkPolicy peer from a selector pair; an empty namespaceSelector means the release's namespace. */}}
{{- define "tintype.peer" -}}
- podSelector:
    {{- toYaml (default (dict) .podSelector) | nindent 4 }}
  {{- with .namespaceSelector }}
  namespaceSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* Address ranges when given, else the selector pair. */}}
{{- define "tintype.peerOrCidrs" -}}
{{- if .cidrs -}}
{{- range .cidrs }}
- ipBlock: { cidr: {{ . | quote }} }
{{- end }}
{{- else -}}
{{- include "tintype.peer" . -}}
{{- end -}}
{{- end -}}

{{/* The pods of one role of this release. */}}
{{- define "tintype.rolePeer" -}}
- podSelector:
    matchLabels:
      {{- include "tintype.selector" . | nindent 6 }}
{{- end -}}

{{- define "tintype.dnsEgress" -}}
{{- $dns := .Values.networkPolicy.dns -}}
- ports: [{ port: {{ $dns.port }}, protocol: UDP }, { port: {{ $dns.port }}, protocol: TCP }]
  to:
    {{- include "tintype.peer" $dns | nindent 4 }}
{{- end -}}

{{/* Egress to the OpenTelemetry collector, when tracing is on. */}}
{{- define "tintype.collectorEgress" -}}
{{- if .Values.telemetry.otlpEndpoint -}}
- ports: [{ port: {{ include "tintype.collectorPort" . }}, protocol: TCP }]
  to:
    {{- include "tintype.peer" .Values.telemetry.collectorPeer | nindent 4 }}
{{- end -}}
{{- end -}}

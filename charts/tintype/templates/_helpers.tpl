{{/*
Names: <release>-<role>, or <fullnameOverride>-<role>. Kubernetes caps names at 63 characters: the
release part is cut to leave room for the role's suffix, never the suffix itself.
*/}}
{{- define "tintype.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tintype.name" -}}
{{- $room := sub 62 (len .role) | int -}}
{{- printf "%s-%s" (include "tintype.fullname" .root | trunc $room | trimSuffix "-") .role -}}
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

{{/*
A Deployment's replicas, only while the chart owns them: left out when something else scales the
Deployment (.owned: the controller, an HPA) or the value is null (KEDA, an HPA of your own), so
neither `helm upgrade` nor a GitOps sync resets what that owner set (docs/helm.md, "GitOps").
*/}}
{{- define "tintype.replicas" -}}
{{- if and (not .owned) (not (kindIs "invalid" .replicas)) -}}
replicas: {{ .replicas }}
{{- end -}}
{{- end -}}

{{/* A pod's imagePullSecrets: imagePullSecrets, then global.imagePullSecrets (names or {name: …}). */}}
{{- define "tintype.imagePullSecrets" -}}
{{- $names := list -}}
{{- range concat (.Values.imagePullSecrets | default list) ((.Values.global | default dict).imagePullSecrets | default list) -}}
{{- if kindIs "string" . }}{{ $names = append $names . }}{{ else }}{{ $names = append $names .name }}{{ end -}}
{{- end -}}
{{- with ($names | compact | uniq) -}}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* A role's ServiceAccount name: serviceAccount.name, or <release>-<role>; required when the chart makes none. */}}
{{- define "tintype.serviceAccountName" -}}
{{- $sa := (index .root.Values .role).serviceAccount -}}
{{- if $sa.create -}}
{{- default (include "tintype.name" .) $sa.name -}}
{{- else -}}
{{- required (printf "%s.serviceAccount.name: the ServiceAccount made beforehand (serviceAccount.create is false)" .role) $sa.name -}}
{{- end -}}
{{- end -}}

{{/*
Envoy's listening address for .port, by envoy.ipFamily. auto: both families on one socket where
the edge's Service asks for IPv6 (ipFamilies names it, or a dual-stack ipFamilyPolicy), else IPv4
alone, since binding :: makes Envoy exit on a node booted without IPv6.
*/}}
{{- define "tintype.envoyFamily" -}}
{{- $v := .Values.envoy -}}
{{- $dual := has $v.service.ipFamilyPolicy (list "PreferDualStack" "RequireDualStack") -}}
{{- $families := $v.service.ipFamilies | default list -}}
{{- if ne $v.ipFamily "auto" -}}{{ $v.ipFamily }}
{{- else if or $dual (and (has "IPv6" $families) (has "IPv4" $families)) -}}DualStack
{{- else if has "IPv6" $families -}}IPv6
{{- else -}}IPv4
{{- end -}}
{{- end -}}
{{- define "tintype.envoyBind" -}}
{{- $family := include "tintype.envoyFamily" .root -}}
{{- if eq $family "IPv4" -}}{ address: 0.0.0.0, port_value: {{ .port }} }
{{- else if eq $family "IPv6" -}}{ address: "::", port_value: {{ .port }}, ipv4_compat: false }
{{- else -}}{ address: "::", port_value: {{ .port }}, ipv4_compat: true }
{{- end -}}
{{- end -}}

{{/* The Secret that holds DATABASE_URL, REDIS_URL, TINTYPE_LEASE_SIGNING_KEY, TINTYPE_LEASE_PUBLIC_KEYS, TINTYPE_RENDERER_TOKEN (and TINTYPE_COUNTERS_URL). */}}
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
- name: {{ .name | default .key }}
  valueFrom:
    secretKeyRef:
      name: {{ include "tintype.secretName" .root }}
      key: {{ .key }}
{{- end -}}

{{/*
The key of the tintype Secret policy reads as TINTYPE_COUNTERS_URL (policy.counters.store): its
own (redis), REDIS_URL (cache), or none (postgres: the counters stay in PostgreSQL).
*/}}
{{- define "tintype.countersKey" -}}
{{- $store := .Values.policy.counters.store -}}
{{- if eq $store "redis" }}TINTYPE_COUNTERS_URL{{ else if eq $store "cache" }}REDIS_URL{{ end -}}
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

{{/*
Seconds a pod gets once it is deleted: its drain after SIGTERM (drainWaitSeconds), then the renders in
flight after SIGTERM (the budget and the edge's margin), and 10 s.
*/}}
{{- define "tintype.gracePeriod" -}}
{{- add .Values.drainWaitSeconds (include "tintype.drainTimeSeconds" . | atoi) 10 -}}
{{- end -}}

{{/* The longest an answer may take through the edge: the render budget and the edge's margin (Envoy's --drain-time-s). */}}
{{- define "tintype.drainTimeSeconds" -}}
{{- add (div .Values.renderBudgetMs 1000) .Values.edgeMarginSeconds -}}
{{- end -}}

{{/*
A tintype role drains at SIGTERM (lib/admin.ts drainAfterSignal): readiness fails at once and it
keeps serving for drainWaitSeconds while the endpoints and Envoy let go of it, then finishes what
is in flight. No preStop: a drain that a request could begin, anything reaching the admin port
could begin (docs/security.md).
*/}}
{{- define "tintype.termDrainEnv" -}}
- { name: TINTYPE_TERM_DRAIN_S, value: {{ .Values.drainWaitSeconds | int64 | toString | quote }} }
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

{{/*
The keys this chart version reads from secrets.existingSecret and tls.existingSecret. Where the
cluster can be read (helm install/upgrade; not helm template), a Secret that lacks some fails the
render with the keys to add, instead of pods that never start (charts/tintype/UPGRADING.md).
*/}}
{{- define "tintype.validateExistingSecrets" -}}
{{- $want := dict -}}
{{- with .Values.secrets.existingSecret -}}
{{- $keys := list "DATABASE_URL" "REDIS_URL" "TINTYPE_LEASE_SIGNING_KEY" "TINTYPE_LEASE_PUBLIC_KEYS" "GUARD_TOKEN_KEY" "TINTYPE_RENDERER_TOKEN" -}}
{{- with include "tintype.countersKey" $ }}{{ $keys = append $keys . | uniq }}{{ end -}}
{{- if $.Values.migrations.enabled }}{{ $keys = append $keys $.Values.migrations.databaseUrlKey | uniq }}{{ end -}}
{{- $_ := set $want . (list "secrets.existingSecret" $keys) -}}
{{- end -}}
{{- if and .Values.envoy.enabled .Values.tls.existingSecret -}}
{{- $_ := set $want .Values.tls.existingSecret (list "tls.existingSecret" (list "tls.crt" "tls.key")) -}}
{{- end -}}
{{- range $name, $w := $want -}}
{{- $live := lookup "v1" "Secret" $.Release.Namespace $name -}}
{{- if $live -}}
{{- $missing := list -}}
{{- range (index $w 1) }}{{ if not (hasKey (default (dict) $live.data) .) }}{{ $missing = append $missing . }}{{ end }}{{ end -}}
{{- if $missing -}}
{{- fail (printf "the Secret %s (%s) lacks %s, which chart %s reads: add them to it (charts/tintype/UPGRADING.md)" $name (index $w 0) (join ", " $missing) $.Chart.Version) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Refuses a release the chart cannot run. */}}
{{- define "tintype.validate" -}}
{{- $s := .Values.secrets -}}
{{- if $s.existingSecret -}}
{{- if or $s.databaseUrl $s.redisUrl $s.leaseSigningKey $s.leasePublicKeys $s.guardTokenKey $s.rendererToken -}}
{{- fail "secrets.existingSecret is set: leave secrets.databaseUrl, secrets.redisUrl, secrets.leaseSigningKey, secrets.leasePublicKeys, secrets.guardTokenKey and secrets.rendererToken empty (they belong in that Secret)" -}}
{{- end -}}
{{- else -}}
{{- if not (and $s.databaseUrl $s.redisUrl $s.leaseSigningKey $s.leasePublicKeys $s.rendererToken) -}}
{{- fail "set secrets.existingSecret, or all of secrets.databaseUrl, secrets.redisUrl, secrets.leaseSigningKey, secrets.leasePublicKeys and secrets.rendererToken" -}}
{{- end -}}
{{- if lt (len (default "" $s.guardTokenKey)) 43 -}}
{{- fail "set secrets.guardTokenKey to the base64 of 32 random bytes (openssl rand -base64 32): the guard accepts only render tokens made with it (charts/tintype/UPGRADING.md 0.3.0)" -}}
{{- end -}}
{{- end -}}
{{- $store := .Values.policy.counters.store -}}
{{- if and (eq $store "redis") (not $s.existingSecret) (not $s.countersUrl) -}}
{{- fail "policy.counters.store is redis: set secrets.countersUrl (redis://, rediss://, redis+sentinel://, redis+cluster://…), or the key TINTYPE_COUNTERS_URL of secrets.existingSecret" -}}
{{- end -}}
{{- if and $s.countersUrl (or $s.existingSecret (ne $store "redis")) -}}
{{- fail "secrets.countersUrl is read only with policy.counters.store redis and without secrets.existingSecret (whose key TINTYPE_COUNTERS_URL holds it then): leave it empty or set the store" -}}
{{- end -}}
{{- include "tintype.validateExistingSecrets" . -}}
{{- if not .Values.image.repository -}}
{{- fail "set image.repository to the tintype image you built and pushed (docs/helm.md, \"Install\"): no public image is published" -}}
{{- end -}}
{{- $r := .Values.renderer -}}
{{- if and $r.runtimeClassName (not $r.hostUsers) -}}
{{- fail "renderer.runtimeClassName and renderer.hostUsers=false together: sandboxed runtimes (gVisor, Kata) do not support user namespaces and the kubelet refuses the pod; choose one" -}}
{{- end -}}
{{- if ge (int (include "tintype.browserMaxRssMb" .)) (int (include "tintype.browserMemoryMiB" .)) -}}
{{- fail (printf "renderer.browserMaxRssMb (%s) must stay below the browser container's memory limit (%sMi), or the OOM killer acts before the recycle" (include "tintype.browserMaxRssMb" .) (include "tintype.browserMemoryMiB" .)) -}}
{{- end -}}
{{- if ge (int (include "tintype.envoyHeapMiB" .)) (int (include "tintype.envoyMemoryMiB" .)) -}}
{{- fail (printf "envoy.maxHeapMiB (%s) must stay below envoy.resources.limits.memory (%sMi)" (include "tintype.envoyHeapMiB" .) (include "tintype.envoyMemoryMiB" .)) -}}
{{- end -}}
{{- if .Values.envoy.enabled -}}
{{- if and (not .Values.tls.existingSecret) (not (and .Values.tls.certificate .Values.tls.key)) -}}
{{- fail "envoy needs a certificate: set tls.existingSecret, or tls.certificate and tls.key" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
A NetworkPolicy peer from a selector pair, as values.yaml documents them: an empty
namespaceSelector ({}) means any namespace (it is always rendered, since a peer without one means
the release's namespace only); an empty podSelector means every pod of those namespaces.
*/}}
{{- define "tintype.peer" -}}
- podSelector:
    {{- toYaml (default (dict) .podSelector) | nindent 4 }}
  namespaceSelector:
    {{- toYaml (default (dict) .namespaceSelector) | nindent 4 }}
{{- end -}}

{{/*
A peer that lives beside the release unless its values say where: without a namespaceSelector,
the release's own namespace (by its name label); with one, as "tintype.peer" (so {} is any
namespace). Any namespace by default would admit whoever may make a pod with the look-alike
label anywhere in the cluster (docs/security.md).
*/}}
{{- define "tintype.peerHere" -}}
{{- if hasKey .peer "namespaceSelector" -}}
{{- include "tintype.peer" .peer -}}
{{- else -}}
- podSelector:
    {{- toYaml (default (dict) .peer.podSelector) | nindent 4 }}
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ .namespace | quote }}
{{- end -}}
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

{{/* A Redis peer: its address ranges when given, else its pods beside the release unless it says where. */}}
{{- define "tintype.redisPeer" -}}
{{- if .peer.cidrs -}}
{{- include "tintype.peerOrCidrs" .peer -}}
{{- else -}}
{{- include "tintype.peerHere" . -}}
{{- end -}}
{{- end -}}

{{/* The pods of one role of this release. */}}
{{- define "tintype.rolePeer" -}}
- podSelector:
    matchLabels:
      {{- include "tintype.selector" . | nindent 6 }}
{{- end -}}

{{/* DNS: the cluster's DNS pods by selector, and the node-local cache's addresses. */}}
{{- define "tintype.dnsEgress" -}}
{{- $dns := .Values.networkPolicy.dns -}}
- ports: [{ port: {{ $dns.port }}, protocol: UDP }, { port: {{ $dns.port }}, protocol: TCP }]
  to:
    {{- include "tintype.peer" $dns | nindent 4 }}
    {{- range $dns.cidrs }}
    - ipBlock: { cidr: {{ . | quote }} }
    {{- end }}
{{- end -}}

{{/* The memory limit of a renderer pod, in MiB: flatMiB + perSlotMiB × slots + shmMiB. */}}
{{/* The browser container's memory limit (MiB): perSlotMiB × slots + shmMiB (a memory-backed /dev/shm counts against it). */}}
{{- define "tintype.browserMemoryMiB" -}}
{{- $v := .Values.renderer -}}
{{- add (mul $v.memory.perSlotMiB $v.slots) $v.shmMiB -}}
{{- end -}}

{{/*
The guard's bounds (docs/security.md "The guard", "Capacity"): every render of every renderer
holds at most guard.tunnelsPerRender tunnels, so a guard holds them all (a render keeps to one
guard, and one guard may get them all) with the unnamed peers' bound on top, unless
guard.maxTunnels says otherwise. Renderers: renderer.replicas, or the RenderPool's maxReplicas
when something else scales them.
*/}}
{{- define "tintype.guardRenderers" -}}
{{- $r := .Values.renderer.replicas -}}
{{- if or .Values.controller.enabled (kindIs "invalid" $r) }}{{ .Values.controller.renderPool.maxReplicas | int64 }}{{ else }}{{ $r | int64 }}{{ end -}}
{{- end -}}

{{/* Connections one renderer pod holds at one guard: its renders' tunnels and requests, a few more per slot for tallies, and the unnamed bound. */}}
{{- define "tintype.guardPerPeer" -}}
{{- $g := .Values.guard -}}
{{- add (mul .Values.renderer.slots (add $g.tunnelsPerRender 4)) $g.unnamedTunnels -}}
{{- end -}}

{{- define "tintype.guardMaxTunnels" -}}
{{- $g := .Values.guard -}}
{{- if $g.maxTunnels }}{{ $g.maxTunnels | int64 }}{{ else }}{{ add (mul (include "tintype.guardRenderers" . | int64) .Values.renderer.slots $g.tunnelsPerRender) $g.unnamedTunnels }}{{ end -}}
{{- end -}}

{{/* The browser's recycle threshold: renderer.browserMaxRssMb, or its container's limit less the /dev/shm allowance. */}}
{{- define "tintype.browserMaxRssMb" -}}
{{- $v := .Values.renderer -}}
{{- if $v.browserMaxRssMb }}{{ $v.browserMaxRssMb | int64 }}{{ else }}{{ mul $v.memory.perSlotMiB $v.slots }}{{ end -}}
{{- end -}}

{{/* A Kubernetes memory quantity (640Mi, 1Gi, 671088640, 700M) in MiB, rounded down. */}}
{{- define "tintype.mebibytes" -}}
{{- $q := toString . -}}
{{- if hasSuffix "Gi" $q }}{{ mul (trimSuffix "Gi" $q | int64) 1024 }}
{{- else if hasSuffix "Mi" $q }}{{ trimSuffix "Mi" $q | int64 }}
{{- else if hasSuffix "Ki" $q }}{{ div (trimSuffix "Ki" $q | int64) 1024 }}
{{- else if hasSuffix "G" $q }}{{ div (mul (trimSuffix "G" $q | int64) 1000000000) 1048576 }}
{{- else if hasSuffix "M" $q }}{{ div (mul (trimSuffix "M" $q | int64) 1000000) 1048576 }}
{{- else if regexMatch "^[0-9]+$" $q }}{{ div ($q | int64) 1048576 }}
{{- else }}{{ fail (printf "envoy.resources.limits.memory %s: use Mi, Gi, M, G or bytes" $q) }}
{{- end -}}
{{- end -}}

{{/* Envoy's memory limit and the overload manager's heap (envoy.maxHeapMiB, or 80% of the limit). */}}
{{- define "tintype.envoyMemoryMiB" -}}
{{- include "tintype.mebibytes" .Values.envoy.resources.limits.memory -}}
{{- end -}}
{{- define "tintype.envoyHeapMiB" -}}
{{- if .Values.envoy.maxHeapMiB }}{{ .Values.envoy.maxHeapMiB | int64 }}{{ else }}{{ div (mul (include "tintype.envoyMemoryMiB" . | int64) 4) 5 }}{{ end -}}
{{- end -}}

{{/*
A pod template's metadata: the role's labels but the chart's version (podLabels cannot change
the chart's own) and annotations (podAnnotations, then the chart's checksums, which win;
.localVolumes, the pod's emptyDirs for the cluster-autoscaler, unless podAnnotations names
them). .checksums: a dict.
*/}}
{{- define "tintype.podMetadata" -}}
{{- $labels := merge (include "tintype.roleLabels" . | fromYaml) (deepCopy (default (dict) .v.podLabels)) -}}
{{- /* Not the chart's version: a new chart version that changes nothing of a pod does not roll it. */}}
{{- $_ := unset $labels "helm.sh/chart" -}}
{{- $annotations := merge (default (dict) .checksums) (deepCopy (default (dict) .v.podAnnotations)) -}}
{{- /* The cluster-autoscaler keeps a node that holds a pod with an emptyDir unless told these
scratch volumes may go (nothing in them outlives the pod); podAnnotations may say otherwise. */}}
{{- with .localVolumes }}{{ $annotations = merge $annotations (dict "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes" (join "," .)) }}{{ end -}}
labels:
  {{- toYaml $labels | nindent 2 }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
A pod's placement: priorityClassName, nodeSelector, tolerations, affinity, and the spread over
nodes (the chart's topologySpread for this role's pods, then topologySpreadConstraints).
*/}}
{{- define "tintype.podPlacement" -}}
{{- $v := .v -}}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if or $v.topologySpread $v.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- with $v.topologySpread }}
  - maxSkew: {{ .maxSkew }}
    topologyKey: {{ .topologyKey }}
    whenUnsatisfiable: {{ .whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "tintype.selector" $ | nindent 8 }}
  {{- end }}
  {{- with $v.topologySpreadConstraints }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* The operator's extra variables, after the chart's own. */}}
{{- define "tintype.extraEnv" -}}
{{- with .extraEnv }}
{{- toYaml . }}
{{- end }}
{{- end -}}

{{/*
The checksum of the Secret keys one role reads (.keys), for its pod annotations: a change of those
keys with `helm upgrade` rolls exactly the roles that read them
(docs/helm.md, "Rotating the lease secret"). The chart's own Secret is summed from the values; an existing Secret from the
cluster (lookup), which `helm template` and GitOps tools without cluster access cannot read:
empty then, and no annotation is written.
*/}}
{{- define "tintype.secretChecksum" -}}
{{- $root := .root -}}
{{- $s := $root.Values.secrets -}}
{{- $data := dict -}}
{{- if $s.existingSecret -}}
{{- $data = (lookup "v1" "Secret" $root.Release.Namespace $s.existingSecret).data | default dict -}}
{{- else -}}
{{- $data = dict "DATABASE_URL" ($s.databaseUrl | b64enc) "REDIS_URL" ($s.redisUrl | b64enc) "TINTYPE_LEASE_SIGNING_KEY" ($s.leaseSigningKey | b64enc) "TINTYPE_LEASE_PUBLIC_KEYS" ($s.leasePublicKeys | b64enc) "GUARD_TOKEN_KEY" ($s.guardTokenKey | b64enc) "TINTYPE_RENDERER_TOKEN" ($s.rendererToken | b64enc) "TINTYPE_COUNTERS_URL" ($s.countersUrl | default "" | b64enc) -}}
{{- end -}}
{{- if $data -}}
{{- $parts := list -}}
{{- range .keys }}{{ $parts = append $parts (printf "%s=%s" . (get $data . | default "")) }}{{ end -}}
{{- join "\n" $parts | sha256sum -}}
{{- end -}}
{{- end -}}

{{/* The annotation of .keys' checksum as a dict (empty when it cannot be known). */}}
{{- define "tintype.secretChecksums" -}}
{{- $sum := include "tintype.secretChecksum" . -}}
{{- if $sum }}{{ dict "checksum/secret" $sum | toYaml }}{{ else }}{}{{ end -}}
{{- end -}}

{{/* A label selector as text for NOTES: k=v, … or "any". */}}
{{- define "tintype.selectorText" -}}
{{- $parts := list -}}
{{- range $k, $v := (default (dict) .).matchLabels }}{{ $parts = append $parts (printf "%s=%s" $k $v) }}{{ end -}}
{{- range (default (dict) .).matchExpressions }}{{ $parts = append $parts (printf "%s %s %s" .key .operator (join "," (default (list) .values))) }}{{ end -}}
{{- if $parts }}{{ join ", " $parts }}{{ else }}(any){{ end -}}
{{- end -}}
{{- define "tintype.namespaceText" -}}
{{- if or (default (dict) .).matchLabels (default (dict) .).matchExpressions }}namespaces {{ include "tintype.selectorText" . }}{{ else }}any namespace{{ end -}}
{{- end -}}

{{/* Where a "tintype.peerHere" peer is looked for, for NOTES: the release's namespace unless its namespaceSelector says. */}}
{{- define "tintype.hereText" -}}
{{- if hasKey .peer "namespaceSelector" }}{{ include "tintype.namespaceText" .peer.namespaceSelector }}{{ else }}namespace {{ .namespace }}{{ end -}}
{{- end -}}

{{/*
Whether the cache's Redis peer (renderers' egress) may pick the counters' Redis pods: both by
selector, and the cache's labels all among the counters' (namespaces aside: said when in doubt).
*/}}
{{- define "tintype.cacheSelectsCounters" -}}
{{- $np := .Values.networkPolicy -}}
{{- if not (or $np.redis.cidrs $np.counters.cidrs (default (dict) $np.redis.podSelector).matchExpressions) -}}
{{- $counters := default (dict) (default (dict) $np.counters.podSelector).matchLabels -}}
{{- $picks := true -}}
{{- range $k, $v := default (dict) (default (dict) $np.redis.podSelector).matchLabels }}{{ if ne (toString (index $counters $k | default "")) (toString $v) }}{{ $picks = false }}{{ end }}{{ end -}}
{{- if $picks }}true{{ end -}}
{{- end -}}
{{- end -}}

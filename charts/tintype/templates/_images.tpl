{{- /* The images of the release: docs/helm.md "The images". */ -}}

{{/*
An image reference from .repository, .tag and .digest (by digest when one is given). With
global.imageRegistry (an umbrella chart's mirror) the repository's registry is replaced by it, or
put in front where the repository names none: every image of the release follows it.
*/}}
{{- define "tintype.imageRef" -}}
{{- $repository := .repository -}}
{{- with ((.root.Values.global | default dict).imageRegistry) -}}
{{- $parts := splitList "/" $repository -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $repository = join "/" (rest $parts) -}}
{{- end -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) $repository -}}
{{- end -}}
{{- if .digest -}}
{{- printf "%s:%s@%s" $repository .tag .digest -}}
{{- else -}}
{{- printf "%s:%s" $repository .tag -}}
{{- end -}}
{{- end -}}

{{/*
A tintype role's image (.image: the role's image values; .target: its Dockerfile target's suffix,
core, renderer or controller): the role's repository, else image.repository with `-<target>`
(REGISTRY/tintype-core: docs/helm.md "The images"); its tag, else .tag where given (the drain
helper's: the chart's appVersion), else image.tag, else the chart's appVersion; its own digest,
never another image's. With image.perRole false every Node role runs
the one `tintype` image (image.repository, image.digest) unless its own repository is set.
*/}}
{{- define "tintype.roleImage" -}}
{{- $img := .root.Values.image -}}
{{- $i := default (dict) .image -}}
{{- $repository := $i.repository -}}
{{- $digest := $i.digest -}}
{{- if not $repository -}}
{{- if $img.perRole -}}
{{- $repository = printf "%s-%s" $img.repository .target -}}
{{- else -}}
{{- $repository = $img.repository -}}
{{- $digest = default $img.digest $digest -}}
{{- end -}}
{{- end -}}
{{- $tag := default (default (default .root.Chart.AppVersion $img.tag) .tag) $i.tag -}}
{{- include "tintype.imageRef" (dict "root" .root "repository" $repository "tag" $tag "digest" $digest) -}}
{{- end -}}

{{/* Each tintype role's image: policy and the guard (and the migration Job, as policy) run tintype-core. */}}
{{- define "tintype.policyImage" -}}
{{- include "tintype.roleImage" (dict "root" . "image" .Values.policy.image "target" "core") -}}
{{- end -}}
{{- define "tintype.guardImage" -}}
{{- include "tintype.roleImage" (dict "root" . "image" .Values.guard.image "target" "core") -}}
{{- end -}}
{{- define "tintype.rendererImage" -}}
{{- include "tintype.roleImage" (dict "root" . "image" .Values.renderer.image "target" "renderer") -}}
{{- end -}}
{{- define "tintype.controllerImage" -}}
{{- include "tintype.roleImage" (dict "root" . "image" .Values.controller.image "target" "controller") -}}
{{- end -}}

{{/*
Envoy's drain helper (tintype-core): its tag is envoy.drain.image.tag, else the chart's appVersion,
never image.tag, so a new tintype release leaves the edge's pods as they are (docs/helm.md,
"Rolling restarts").
*/}}
{{- define "tintype.drainImage" -}}
{{- include "tintype.roleImage" (dict "root" . "image" .Values.envoy.drain.image "target" "core" "tag" .Chart.AppVersion) -}}
{{- end -}}

{{/*
The browser container's image (Chromium, fonts, the launcher). Its repository and tag follow
image.* (`<repository>-browser`, the same tag) unless set: the two images are built and pushed
together; its digest is its own (another image).
*/}}
{{- define "tintype.browserImage" -}}
{{- $i := .Values.renderer.browser.image -}}
{{- $repository := default (printf "%s-browser" .Values.image.repository) $i.repository -}}
{{- $tag := default (default .Chart.AppVersion .Values.image.tag) $i.tag -}}
{{- include "tintype.imageRef" (dict "root" . "repository" $repository "tag" $tag "digest" $i.digest) -}}
{{- end -}}

{{- define "tintype.envoyImage" -}}
{{- $i := .Values.envoy.image -}}
{{- include "tintype.imageRef" (dict "root" . "repository" $i.repository "tag" $i.tag "digest" $i.digest) -}}
{{- end -}}

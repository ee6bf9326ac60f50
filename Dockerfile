# syntax=docker/dockerfile:1
# The images of tintype, one target each (docs/helm.md "The images"):
#   tintype          every role but the browser: `tintype <role>` (policy, renderer, guard,
#                    controller, keys, usage). Node 24, the compiled roles, production packages,
#                    tini; no Chromium, no fonts. User 10001.
#   tintype-browser  the renderer pod's browser container: Chromium's headless shell, the fonts of
#                    scripts/apt-packages.txt, tini and the launcher (compiled, with Node 24 to run
#                    it), nothing else. User 10002.
#   tintype-all      (the default) `tintype start` on one machine: the browser's packages with
#                    iproute2 (TINTYPE_ISOLATION=netns) and the roles as the tintype image has them.
# No TypeScript at run time: the roles are compiled here (`npm run build`); tsx and typescript
# are development packages. Each image lists the Debian packages it holds, with their versions, in
# /usr/share/tintype/debian-packages.txt (dpkg-query), so two builds can be compared.
# Nothing is written outside /tmp (and the browser socket's directory): run with a read-only root,
# an emptyDir (or tmpfs) on /tmp and a memory-backed /dev/shm.
#
#   docker build --target tintype -t tintype:0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
#   docker build --target tintype-browser -t tintype-browser:0.1.0 .
#   docker build -t tintype-all:0.1.0 . && docker run --read-only --tmpfs /tmp --shm-size 128m -p 8080:8080 tintype-all:0.1.0
#
# scripts/build-images.sh builds all three with buildah from a base made on the machine (Debian
# bookworm by mmdebstrap, Node 24 from npm), passed as NODE_IMAGE, pinned by its digest.
# Multi-arch: nothing here names an architecture (buildx --platform linux/amd64,linux/arm64).
ARG NODE_IMAGE=docker.io/library/node:24.21.0-bookworm-slim

# npm reaches its registry with the CA certificates of the build secret `ca` added to Node's own,
# when one is given (a TLS-inspecting proxy on the way: `--secret id=ca,src=<its CA file>`); a
# secret is never part of a layer. Without it, Node's own certificates.

# Production packages only, no install scripts: nothing is compiled. On Node 24 the SQLite driver
# is better-sqlite3 13 (the alias better-sqlite3-napi), whose package carries its prebuilt
# binaries; better-sqlite3 12, the driver of the checkout's Node 20 (policy/store/sqlite-driver.ts),
# is never loaded here and is left out.
FROM ${NODE_IMAGE} AS packages
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=ca \
    NODE_EXTRA_CA_CERTS=/run/secrets/ca npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/better-sqlite3

# The roles compiled to JavaScript, with the lockfile's TypeScript in a directory of its own.
FROM ${NODE_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=ca \
    NODE_EXTRA_CA_CERTS=/run/secrets/ca npm install --prefix /opt/tsc --no-save --no-audit --no-fund \
      "typescript@$(node -p "require('./package-lock.json').packages['node_modules/typescript'].version")"
COPY bin ./bin
COPY lib ./lib
COPY policy ./policy
COPY renderer ./renderer
COPY guard ./guard
COPY envoy ./envoy
COPY controller ./controller
RUN /opt/tsc/node_modules/.bin/tsc -p tsconfig.build.json \
 && chmod 0755 dist/bin/tintype.js

# The roles' image. Its only fonts are the OG cards' faces, which the renderer's Node process draws
# with (renderer/og/typeset/faces.ts: Noto, Droid Sans Fallback, Nanum); Chromium's are not here.
FROM ${NODE_IMAGE} AS tintype
RUN --mount=type=cache,target=/var/cache/apt \
    --mount=type=cache,target=/var/lib/apt/lists \
    rm -f /etc/apt/apt.conf.d/docker-clean \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini ca-certificates \
      fonts-noto-core fonts-noto-mono fonts-droid-fallback fonts-nanum \
 && useradd --uid 10001 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin tintype \
 && mkdir -p /usr/share/tintype \
 && dpkg-query -W -f '${Package}\t${Version}\n' > /usr/share/tintype/debian-packages.txt
WORKDIR /app
COPY --from=packages /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /build/dist ./
RUN ln -s /app/bin/tintype.js /usr/local/bin/tintype \
 && tintype --help > /dev/null 2>&1 \
 && rm -rf /tmp/* /tmp/.[!.]*
ENV NODE_ENV=production \
    HOME=/tmp \
    TINTYPE_DATA_DIR=/tmp/tintype
# Labels last: a new revision or date never rebuilds a layer above.
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="tintype" \
      org.opencontainers.image.description="A metered HTTP API that renders web pages and HTML to PNG, JPEG and PDF, and draws Open Graph cards: every role but the browser." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="UNLICENSED" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
USER 10001:10001
EXPOSE 8080 8081 8082 3128
# tini reaps only as PID 1 or as a child subreaper; -s makes it one, so it still reaps where it is
# not PID 1. A command given to the container replaces all of this: the chart gives only the role (args).
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "tintype"]
CMD ["--help"]

# Chromium's headless shell, every font of scripts/apt-packages.txt and tini: the browser's
# packages, one layer shared by tintype-browser and tintype-all.
FROM ${NODE_IMAGE} AS chromium
COPY scripts/apt-packages.txt /tmp/apt-packages.txt
RUN --mount=type=cache,target=/var/cache/apt \
    --mount=type=cache,target=/var/lib/apt/lists \
    rm -f /etc/apt/apt.conf.d/docker-clean \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium-headless-shell tini \
      $(grep '^fonts-' /tmp/apt-packages.txt | sed 's/[[:space:]]//g') \
 && rm -f /tmp/apt-packages.txt

# The browser container's image: the launcher (renderer/browser/launcher, which imports only
# Node's own modules) is all it runs of tintype.
FROM chromium AS tintype-browser
RUN useradd --uid 10002 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin browser \
 && mkdir -p /usr/share/tintype \
 && dpkg-query -W -f '${Package}\t${Version}\n' > /usr/share/tintype/debian-packages.txt
COPY --from=build /build/dist/renderer/browser/launcher /app/launcher
ENV HOME=/tmp
# Labels last: a new revision or date never rebuilds a layer above.
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="tintype-browser" \
      org.opencontainers.image.description="tintype's browser container: Chromium's headless shell, its fonts and the launcher that starts it for the renderer." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="UNLICENSED" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
USER 10002:10002
# The launcher is PID 1's only child: tini reaps what a killed Chromium leaves.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/launcher/main.js"]
CMD []

# `tintype start` on one machine (and any role): the browser's packages, iproute2
# (TINTYPE_ISOLATION=netns), and the roles as in the tintype image, added after them so a change
# of the roles rebuilds only their layers.
FROM chromium AS tintype-all
RUN --mount=type=cache,target=/var/cache/apt \
    --mount=type=cache,target=/var/lib/apt/lists \
    apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends iproute2 ca-certificates \
 && useradd --uid 10001 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin tintype \
 && mkdir -p /usr/share/tintype \
 && dpkg-query -W -f '${Package}\t${Version}\n' > /usr/share/tintype/debian-packages.txt
WORKDIR /app
COPY --from=packages /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /build/dist ./
RUN ln -s /app/bin/tintype.js /usr/local/bin/tintype \
 && tintype --help > /dev/null 2>&1 \
 && rm -rf /tmp/* /tmp/.[!.]*
ENV NODE_ENV=production \
    HOME=/tmp \
    TINTYPE_DATA_DIR=/tmp/tintype
# Labels last: a new revision or date never rebuilds a layer above.
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="tintype-all" \
      org.opencontainers.image.description="A metered HTTP API that renders web pages and HTML to PNG, JPEG and PDF, and draws Open Graph cards: every role and Chromium, for one machine." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="UNLICENSED" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
USER 10001:10001
EXPOSE 8080 8081 8082 3128
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "tintype"]
CMD ["start"]

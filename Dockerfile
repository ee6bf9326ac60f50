# syntax=docker/dockerfile:1
# The images of tintype, one target each (docs/helm.md "The images"), all on Debian 13 (trixie)
# with its security suite and Node 24:
#   tintype-core        policy, guard, migrate, keys, usage, envoy-drain: Node, the compiled roles,
#                       the production packages every role loads, tini. No Chromium, no font, no
#                       emoji data, no Kubernetes client. User 10001. The roles' layer is said here once.
#   tintype-renderer    the renderer's Node process: tintype-core, the OG cards' fonts, the emoji
#                       data and the packages only the renderer loads (puppeteer-core, HarfBuzz, …).
#   tintype-controller  the operator: tintype-core and the Kubernetes client.
#   tintype             every role but the browser (tintype-renderer and the Kubernetes client): the
#                       chart's image.repository while it runs one image for every Node role.
#   tintype-browser     the renderer pod's browser container: Chromium's headless shell, the fonts
#                       of scripts/apt-packages.txt, tini and the launcher (with Node to run it).
#                       User 10002.
#   tintype-all         (the default) `tintype start` on one machine: tintype, Chromium as in the
#                       browser image, iproute2 (TINTYPE_ISOLATION=netns).
# No TypeScript at run time: the roles are compiled here (`npm run build`). Each image carries its
# SBOM, CycloneDX JSON naming every Debian and npm package with its version and Node, at
# /usr/share/tintype/sbom.cdx.json (scripts/images/sbom.mjs), written last.
# Nothing is written outside /tmp (and the browser socket's directory): run with a read-only root,
# an emptyDir (or tmpfs) on /tmp and a memory-backed /dev/shm.
#
#   docker build --target tintype -t tintype:0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
#   docker build --target tintype-browser -t tintype-browser:0.1.0 .
#   docker build -t tintype-all:0.1.0 . && docker run --read-only --tmpfs /tmp --shm-size 128m -p 8080:8080 tintype-all:0.1.0
#
# scripts/build-images.sh builds them all with buildah from two bases made on the machine (Debian
# trixie by mmdebstrap, Node from npm; BUILD_IMAGE adds npm), pinned by digest.
# Multi-arch: nothing here names an architecture (buildx --platform linux/amd64,linux/arm64).
ARG NODE_IMAGE=docker.io/library/node:24.21.0-trixie-slim
ARG BUILD_IMAGE=docker.io/library/node:24.21.0-trixie-slim

# npm reaches its registry with the CA certificates of the build secret `ca` added to Node's own,
# when one is given (a TLS-inspecting proxy on the way: `--secret id=ca,src=<its CA file>`); a
# secret is never part of a layer. Without it, Node's own certificates.

# Production packages only, no install scripts: nothing is compiled (better-sqlite3 carries its
# prebuilt binaries). What no process loads is left out: type declarations, source maps, the
# SQLite sources and the other platforms' binaries. Then the packages only some roles load are
# moved aside, each role's into a tree of its own (scripts/images/split-packages.mjs).
FROM ${BUILD_IMAGE} AS packages
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=ca \
    --mount=type=bind,source=scripts/images/split-packages.mjs,target=/tmp/split-packages.mjs \
    NODE_EXTRA_CA_CERTS=/run/secrets/ca npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' -o -name '*.ts.map' \) -delete \
 && (cd node_modules/better-sqlite3 && rm -rf deps src build binding.gyp \
     && find prebuilds -type f ! -name "linux-$(node -p process.arch).node" -delete) \
 && node /tmp/split-packages.mjs /app /split \
      renderer=emoji-datasource-google,puppeteer-core,harfbuzzjs,pureimage \
      controller=@kubernetes/client-node

# The roles compiled to JavaScript, with the lockfile's TypeScript in a directory of its own.
FROM ${BUILD_IMAGE} AS build
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

# The roles' layer: user, packages, compiled roles, the command, settings. Every roles' image
# below is built on it.
FROM ${NODE_IMAGE} AS tintype-core
RUN --mount=type=cache,target=/var/cache/apt \
    --mount=type=cache,target=/var/lib/apt/lists \
    rm -f /etc/apt/apt.conf.d/docker-clean \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini ca-certificates \
 && useradd --uid 10001 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin tintype
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
EXPOSE 8080 8081 8082 3128
# tini reaps only as PID 1 or as a child subreaper; -s makes it one, so it still reaps where it is
# not PID 1. A command given to the container replaces all of this: the chart gives only the role (args).
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "tintype"]
CMD ["--help"]
ARG VERSION=0.1.0
RUN --mount=type=bind,source=scripts/images/sbom.mjs,target=/tmp/sbom.mjs \
    mkdir -p /usr/share/tintype && node /tmp/sbom.mjs write / /app tintype-core "${VERSION}" > /usr/share/tintype/sbom.cdx.json
USER 10001:10001

# The renderer's Node process: the OG cards' faces, which it draws with (renderer/og/typeset/faces.ts:
# Noto, Droid Sans Fallback, Nanum; Chromium's are not here), the emoji data and its packages.
FROM tintype-core AS tintype-renderer
USER root
RUN --mount=type=cache,target=/var/cache/apt \
    --mount=type=cache,target=/var/lib/apt/lists \
    apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      fonts-noto-core fonts-noto-mono fonts-droid-fallback fonts-nanum
COPY --from=packages /split/renderer/node_modules ./node_modules
ARG VERSION=0.1.0
RUN --mount=type=bind,source=scripts/images/sbom.mjs,target=/tmp/sbom.mjs \
    node /tmp/sbom.mjs write / /app tintype-renderer "${VERSION}" > /usr/share/tintype/sbom.cdx.json
USER 10001:10001

# The operator: the Kubernetes client.
FROM tintype-core AS tintype-controller
USER root
COPY --from=packages /split/controller/node_modules ./node_modules
ARG VERSION=0.1.0
RUN --mount=type=bind,source=scripts/images/sbom.mjs,target=/tmp/sbom.mjs \
    node /tmp/sbom.mjs write / /app tintype-controller "${VERSION}" > /usr/share/tintype/sbom.cdx.json
USER 10001:10001

# Every role but the browser.
FROM tintype-renderer AS tintype
USER root
COPY --from=packages /split/controller/node_modules ./node_modules
ARG VERSION=0.1.0
RUN --mount=type=bind,source=scripts/images/sbom.mjs,target=/tmp/sbom.mjs \
    node /tmp/sbom.mjs write / /app tintype "${VERSION}" > /usr/share/tintype/sbom.cdx.json
USER 10001:10001

# The browser container's image: the launcher (renderer/browser/launcher, which imports only
# Node's own modules) is all it runs of tintype.
FROM ${NODE_IMAGE} AS tintype-browser
ARG CHROMIUM_VERSION=
RUN --mount=type=cache,target=/var/cache/apt \
    --mount=type=cache,target=/var/lib/apt/lists \
    --mount=type=bind,source=scripts,target=/tmp/scripts \
    CHROMIUM_VERSION="${CHROMIUM_VERSION}" /tmp/scripts/images/install-chromium.sh /tmp/scripts/apt-packages.txt \
 && useradd --uid 10002 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin browser
COPY --from=build /build/dist/renderer/browser/launcher /app/launcher
# Chromium's fontconfig file (renderer/browser/launcher/fontconfig.ts): the system's, with no user
# location, owned by root: read-only to the browser's uid (docs/security.md "The browser container").
RUN node -e "import('/app/launcher/fontconfig.js').then((m) => process.stdout.write(m.systemOnlyFontsConfig()))" > /etc/fonts/tintype-browser.conf
ENV HOME=/tmp TINTYPE_BROWSER_FONTCONFIG=/etc/fonts/tintype-browser.conf
# The launcher is PID 1's only child: tini reaps what a killed Chromium leaves.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/launcher/main.js"]
CMD []
ARG VERSION=0.1.0
RUN --mount=type=bind,source=scripts/images/sbom.mjs,target=/tmp/sbom.mjs \
    mkdir -p /usr/share/tintype && node /tmp/sbom.mjs write / /app tintype-browser "${VERSION}" > /usr/share/tintype/sbom.cdx.json
USER 10002:10002

# `tintype start` on one machine (and any role): every role, Chromium as the browser image has it
# and iproute2 (TINTYPE_ISOLATION=netns).
FROM tintype AS tintype-all
USER root
ARG CHROMIUM_VERSION=
RUN --mount=type=cache,target=/var/cache/apt \
    --mount=type=cache,target=/var/lib/apt/lists \
    --mount=type=bind,source=scripts,target=/tmp/scripts \
    CHROMIUM_VERSION="${CHROMIUM_VERSION}" /tmp/scripts/images/install-chromium.sh /tmp/scripts/apt-packages.txt iproute2
CMD ["start"]
ARG VERSION=0.1.0
RUN --mount=type=bind,source=scripts/images/sbom.mjs,target=/tmp/sbom.mjs \
    node /tmp/sbom.mjs write / /app tintype-all "${VERSION}" > /usr/share/tintype/sbom.cdx.json
USER 10001:10001

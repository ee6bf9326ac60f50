# syntax=docker/dockerfile:1
# The one image of every tintype role: `tintype <role>` (start, policy, renderer, guard,
# controller, keys). Debian bookworm-slim with Node 20, Debian's chromium-headless-shell and the
# fonts of scripts/apt-packages.txt, tini as the init (it reaps the children of a killed Chromium
# and forwards signals to tintype), the lockfile's production packages, user 10001. Nothing is written outside /tmp: run it with a
# read-only root and an emptyDir (or tmpfs) on /tmp, and a memory-backed /dev/shm.
#
#   docker build -t tintype:0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
#   docker run --read-only --tmpfs /tmp --shm-size 128m -p 8080:8080 tintype:0.1.0 start
#
# Multi-arch: nothing here names an architecture (buildx --platform linux/amd64,linux/arm64).
ARG NODE_IMAGE=docker.io/library/node:20-bookworm-slim

# Production packages only; compilers for a native module without a prebuilt binary stay here.
FROM ${NODE_IMAGE} AS packages
WORKDIR /app
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="tintype" \
      org.opencontainers.image.description="A metered HTTP API that renders web pages and HTML to PNG, JPEG and PDF, and draws Open Graph cards." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="UNLICENSED" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"

# Chromium's headless shell, every font package of scripts/apt-packages.txt, tini, iproute2 (the
# network namespace of TINTYPE_ISOLATION=netns outside Kubernetes) and CA certificates.
COPY scripts/apt-packages.txt /tmp/apt-packages.txt
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium-headless-shell tini iproute2 ca-certificates \
      $(grep '^fonts-' /tmp/apt-packages.txt | sed 's/[[:space:]]//g') \
 && rm -rf /var/lib/apt/lists/* /tmp/apt-packages.txt \
 && useradd --uid 10001 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin tintype

WORKDIR /app
COPY --from=packages /app/node_modules ./node_modules
# The application, owned by root and read-only to the user that runs it. .dockerignore lets in
# only the roles' folders and the package files (no tests, benchmarks, chart, data or git).
COPY . ./
RUN ln -s /app/bin/tintype /usr/local/bin/tintype \
 && tintype --help > /dev/null \
 && rm -rf /tmp/* /tmp/.[!.]*

ENV NODE_ENV=production \
    HOME=/tmp \
    TINTYPE_DATA_DIR=/tmp/tintype
USER 10001:10001
EXPOSE 8080 8081 8082 3128
# tini reaps only as PID 1 or as a child subreaper; -s makes it one, so it still reaps where it is
# not PID 1 (a pod with shareProcessNamespace, as the chart's renderer, or `docker run --pid`).
# A command given to the container replaces all of this: the chart gives only the role (args).
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "tintype"]
CMD ["start"]

# pluggable-scheduler container image.
#
#   docker build -t pluggable-scheduler:dev .
#   docker build --build-arg EXTRA_PLUGINS="scheduler-plugin-foo==1.2.0" -t my-scheduler .
#
# Two stages on the same Python base, BASE_IMAGE (the virtualenv's interpreter
# is the base image's python3, so both stages must use the same one):
#
# - builder: installs the runtime dependencies from requirements.lock with
#   --require-hashes (binary wheels only), builds our wheel with the hash-pinned
#   build backend of deploy/docker/requirements-build.lock, installs it, then the
#   optional EXTRA_PLUGINS, all into the virtualenv /opt/pluggable-scheduler.
# - runtime: the base image plus that virtualenv, running as UID/GID 65532.
#   No compilers (the slim base has none and none are installed) and no pip
#   caches. pip itself stays in the virtualenv so that derived images can add
#   plugins (docs/deploying.md, deploy/overlays/coscheduling/Dockerfile):
#
#     FROM ghcr.io/pluggable-scheduler/pluggable-scheduler:0.1.0
#     USER root
#     RUN pip install --no-cache-dir scheduler-plugin-foo==1.2.0
#     USER 65532:65532
#
#   The virtualenv is owned by root and read-only for the scheduler's user, so
#   only such a build (as root) can change it, never the running scheduler.
#
# Where pip gets packages: PyPI, unless pip's own variables are given as build
# arguments (PIP_INDEX_URL for a mirror or private index, PIP_FIND_LINKS for a
# wheelhouse served over HTTP, PIP_NO_INDEX=1 to use only those), e.g.
#   docker build --network host --build-arg PIP_NO_INDEX=1 \
#       --build-arg PIP_FIND_LINKS=http://127.0.0.1:8080/ -t pluggable-scheduler:dev .
# They exist only while building and are not kept in the image's environment;
# pass no credentials this way (docker history shows build arguments).
#
# No registry is needed but the base image's: no `# syntax=` line (a frontend
# image BuildKit would pull) and no RUN --mount, which the classic builder rejects.
#
# requirements.lock is regenerated with tools/lock-requirements.sh.

# The one base of both stages: any image with python3 (3.11) and its venv
# module, e.g. one made without a registry from `debootstrap` and `docker import`
# (tests/image/). Pin it by digest for bit-for-bit rebuilds:
# python:3.11-slim-bookworm@sha256:...
# checkov:skip=CKV_DOCKER_7:The base is a build argument whose default is a version tag; an image made without a registry can stand in for it
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE} AS python-base

FROM python-base AS builder

ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_FIND_LINKS
ARG PIP_NO_INDEX
ARG PIP_TRUSTED_HOST

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    VIRTUAL_ENV=/opt/pluggable-scheduler \
    PATH=/opt/pluggable-scheduler/bin:$PATH

RUN python3 -m venv /opt/pluggable-scheduler \
    && python3 -m venv /opt/build

WORKDIR /src

# Dependencies first: this layer is cached until the lock changes.
COPY requirements.lock deploy/docker/requirements-build.lock ./
RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r requirements.lock \
    && /opt/build/bin/pip install --no-cache-dir --require-hashes --only-binary=:all: \
        -r requirements-build.lock

COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
# Our wheel, built offline with the pinned backend, installed without touching
# the locked deps. By name from /wheels, not by path: pip records a path as a
# direct URL (PEP 610), and `pip freeze` in a derived image would then print
# `pluggable-scheduler @ file:///wheels/...`, a constraint no later build can meet.
# (DL3013: the name is pinned by /wheels holding exactly the wheel built here.)
# hadolint ignore=DL3013
RUN /opt/build/bin/pip wheel --no-cache-dir --no-build-isolation --no-deps --wheel-dir /wheels . \
    && pip install --no-cache-dir --no-deps --no-index --find-links /wheels pluggable-scheduler

# Optional plugins, as pip requirement specifiers (names, pins, URLs, or paths
# under plugins-contrib/ of the build context), e.g.
#   --build-arg EXTRA_PLUGINS="scheduler-plugin-foo==1.2.0 ./plugins-contrib/scheduler-plugin-bar"
# The installed versions (the scheduler's and its locked dependencies') are
# constraints: a plugin that needs a different version of one of them fails the
# build instead of silently replacing it.
# Every installed plugin must load (deploy/docker/check-plugins.py): the
# build fails on a plugin's load error instead of the scheduler's start-up.
ARG EXTRA_PLUGINS=""
COPY plugins-contrib ./plugins-contrib
COPY deploy/docker/check-plugins.py /usr/local/bin/check-plugins.py
# EXTRA_PLUGINS is split into words on purpose (several specifiers); the user pins them.
RUN if [ -n "${EXTRA_PLUGINS}" ]; then \
        pip freeze > /tmp/constraints.txt \
        && pip install --no-cache-dir -c /tmp/constraints.txt ${EXTRA_PLUGINS} \
        && rm /tmp/constraints.txt; \
    fi \
    && python3 /usr/local/bin/check-plugins.py


FROM python-base

ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="pluggable-scheduler" \
      org.opencontainers.image.description="Kubernetes scheduler whose scheduling logic comes from pip-installed plugins" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"

# The scheduler's user: fixed IDs so that the Deployment's runAsUser/runAsGroup match.
RUN groupadd --system --gid 65532 scheduler \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin scheduler

COPY --from=builder /opt/pluggable-scheduler /opt/pluggable-scheduler

# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only in the Deployment;
# bytecode was compiled at install time.
ENV VIRTUAL_ENV=/opt/pluggable-scheduler \
    PATH=/opt/pluggable-scheduler/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

USER 65532:65532
WORKDIR /

# /healthz, /livez, /readyz and /metrics over HTTPS: the default pluggableScheduler.serverAddress.
EXPOSE 10259

# For `docker run`; Kubernetes uses the Deployment's probes instead. The probe
# reads the running daemon's own command line (--config, --secure-port,
# --bind-address, --plain-http) and asks /livez where and how it serves
# (HTTPS unless --plain-http), so moving the port does not make a healthy
# scheduler unhealthy (scheduler/daemon/healthcheck.py).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python3", "-m", "scheduler.daemon.healthcheck"]

ENTRYPOINT ["pluggable-scheduler"]
CMD ["run", "--config", "/etc/pluggable-scheduler/config.yaml"]

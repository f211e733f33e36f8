#!/usr/bin/env bash
# Regenerate the hash-pinned dependency locks used by the Dockerfile:
#
#   requirements.lock                       runtime dependencies of pyproject.toml
#   deploy/docker/requirements-build.lock   the build backend (hatchling) for the wheel
#
# Run from anywhere, on Linux with Python 3.11 (the image's Python; pip-compile
# resolves for the interpreter and platform it runs on):
#
#   tools/lock-requirements.sh            # keep pins, add/remove what pyproject.toml changed
#   tools/lock-requirements.sh --upgrade  # move every pin to the newest allowed version
#
# pip-tools runs from a throwaway virtualenv, so nothing is installed into the
# dev environment. Commit both files together with the pyproject.toml change.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3.11}"
pip_tools="pip-tools==7.6.2"

if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "error: $python is not Python 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$pip_tools"

# A local wheel directory (PIP_FIND_LINKS) must not leak into the committed lock.
unset PIP_FIND_LINKS
export CUSTOM_COMPILE_COMMAND="tools/lock-requirements.sh"
common=(--quiet --generate-hashes --allow-unsafe --strip-extras
        --no-emit-index-url --no-emit-find-links --no-emit-trusted-host "$@")

# pip-compile reads the project's metadata from pyproject.toml; run it where the
# lock is written so the file's comments carry repository-relative paths.
cd "$root"
"$work/venv/bin/pip-compile" "${common[@]}" --output-file requirements.lock pyproject.toml

build_in="$work/requirements-build.in"
python3 - "$root/pyproject.toml" > "$build_in" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
PY
cp "$build_in" "$root/deploy/docker/requirements-build.in"
"$work/venv/bin/pip-compile" "${common[@]}" \
    --output-file deploy/docker/requirements-build.lock deploy/docker/requirements-build.in
echo "wrote requirements.lock and deploy/docker/requirements-build.lock"

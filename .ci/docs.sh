#!/usr/bin/env bash
# Builds the documentation site (MkDocs + mkdocstrings, mkdocs.yml) in strict mode: any
# warning (a broken link, a docstring griffe cannot parse, a page missing from the nav)
# fails the build. The site is written to site/ (or $SITE_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$VENV")"' EXIT
python3 -m venv "$VENV"
# the docs extra plus pymxnet's own dependencies: the build imports mxnet (src/) to
# generate the API-coverage part of "Coming from MXNet 1.9.1"
"$VENV/bin/python" -m pip install -q -e ".[docs]"
"$VENV/bin/python" -m mkdocs build --strict --site-dir "${SITE_DIR:-site}"
echo "docs built in ${SITE_DIR:-site}/"

#!/usr/bin/env bash
# `pip install .` over a user's current stack must change none of its versions.
# A fresh venv gets the newest releases pmctx supports (the set pinned in constraints.txt, which
# `make lock` refreshes) of the stack a PyMC user already has; then pmctx is installed with plain
# pip, as a user would, and `pip freeze` before and after must agree apart from pmctx itself.
set -euo pipefail
python=${1:?usage: check_install.sh PYTHON}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
bin=$work/venv/bin
stack="pymc pytensor arviz arviz-base arviz-stats arviz-plots nutpie numba numpy scipy pandas
xarray zarr dask distributed matplotlib"
"$bin/python" -m pip install --quiet -c constraints.txt uv
# shellcheck disable=SC2086
"$bin/uv" pip install --quiet --python "$bin/python" -c constraints.txt $stack
"$bin/python" -m pip freeze --all | grep -v -e '^uv==' -e '^pip==' | sort > "$work/before.txt"
"$bin/python" -m pip install --quiet . 2> >(grep -v "^WARNING: Location" >&2)
"$bin/python" -m pip freeze --all | grep -v -e '^uv==' -e '^pip==' | sort > "$work/after.txt"
# Packages pmctx added are fine (its own, and dependencies the stack lacked); a changed version is not.
changed=$(comm -23 "$work/before.txt" "$work/after.txt")
if [ -n "$changed" ]; then
    echo "pip install . changed the versions of an installed stack; before -> after:" >&2
    for line in $changed; do
        name=${line%%==*}
        echo "  $line -> $(grep -i "^$name==" "$work/after.txt" || echo removed)" >&2
    done
    exit 1
fi
(cd "$work" && "$bin/python" -c "import pmctx.models.ibp, pmctx.models.gum, pymc, arviz; print('pmctx', pmctx.__version__, 'over pymc', pymc.__version__, 'arviz', arviz.__version__)")
echo "pip install . kept all $(wc -l < "$work/before.txt") installed versions; added: $(comm -13 "$work/before.txt" "$work/after.txt" | tr '\n' ' ')"

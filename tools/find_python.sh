#!/bin/sh
# Print the path of a Python >= 3.12 (PyMC 6's minimum), or nothing when there is none:
# python3.12, python3.13 and python3 on PATH first, then pyenv's installs, oldest first (3.12 is the version CI tests).
ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }
for name in python3.12 python3.13 python3; do
    path=$(command -v "$name" 2>/dev/null) && ok "$path" && { echo "$path"; exit 0; }
done
if command -v pyenv >/dev/null 2>&1; then
    root=$(pyenv root 2>/dev/null)
    for dir in $(ls -d "$root"/versions/3.1[2-9]* 2>/dev/null | sort -V); do
        [ -x "$dir/bin/python3" ] && ok "$dir/bin/python3" && { echo "$dir/bin/python3"; exit 0; }
    done
fi
exit 0

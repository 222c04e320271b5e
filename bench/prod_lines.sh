#!/usr/bin/env bash
# Production lines per Rust source file, largest last: the lines before a
# file's first `#[cfg(test)]` followed by `mod` (its unit tests), in every
# file under src/ and crates/ except test files (tests.rs, tests/, benches/).
#
# Usage: bench/prod_lines.sh [N]   the N largest (default 10)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${1:-10}
[[ $N =~ ^[0-9]+$ ]] || { echo "prod_lines.sh: error: N must be a whole number, not '$N'" >&2; exit 2; }
find src crates -name '*.rs' ! -name 'tests.rs' ! -path '*/tests/*' ! -path '*/benches/*' -print0 |
    while IFS= read -r -d '' f; do
        n=$(awk '/^#\[cfg\(test\)\]/ { getline nx; if (nx ~ /^mod /) { print NR - 1; found = 1; exit } }
                 END { if (!found) print NR }' "$f")
        printf '%6d %s\n' "$n" "$f"
    done | sort -n | tail -n "$N"

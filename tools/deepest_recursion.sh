#!/bin/sh
# Bisects the deepest recursion Recursion.exe reaches on its 1 MiB thread in the current
# environment (run it with or without the CORECLR_* variables of a profiler):
#
#   tools/deepest_recursion.sh [RECURSION_EXE]
#
# Prints "deepest N" (N fits, N + 1 overflows the stack). Each probe is a process:
# about 25 of them. DOTNET defaults to the provisioned runtime.
set -eu
exe=${1:-tests/programs/bin/Recursion.exe}
dotnet=${DOTNET:-target/dotnet-3.1.23/dotnet}
export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1
fits() {
    "$dotnet" "$exe" "$1" >/dev/null 2>&1 && return 0
    [ $? -eq 27 ]
}
lo=1
hi=1000000
fits "$lo" || { echo "deepest_recursion.sh: even depth 1 fails" >&2; exit 1; }
if fits "$hi"; then
    echo "deepest_recursion.sh: $hi fits; raise the bound" >&2
    exit 1
fi
while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    if fits "$mid"; then lo=$mid; else hi=$mid; fi
done
echo "deepest $lo"

#!/bin/sh
# Rebuilds the test programs that need CoreCLR's own framework assemblies (Mono's
# reference assemblies have no AssemblyLoadContext): Unload.exe and its plugin
# UnloadPlugin.dll, with Mono's mcs against the provisioned runtime's
# System.Private.CoreLib (the binaries reference System.Private.CoreLib and
# System.Console directly; System.Runtime and System.Runtime.Extensions are needed
# only to resolve the type forwarders that System.Console's metadata points at).
#
#   tests/programs/build_framework.sh [OUTDIR]
#
# OUTDIR defaults to tests/programs/bin. The runtime is $ILREWRITE_DOTNET_ROOT, by
# default target/dotnet-3.1.23 of this repository (what ilrewrite-corpus provisions).
# Unload.exe gets OUTDIR/Unload.runtimeconfig.json (framework Microsoft.NETCore.App
# 3.1.23) and loads OUTDIR/UnloadPlugin.dll, so both go to the same directory.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/bin"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=${ILREWRITE_DOTNET_ROOT:-"$here/../../target/dotnet-3.1.23"}
fw="$root/shared/Microsoft.NETCore.App/3.1.23"
if [ ! -f "$fw/System.Private.CoreLib.dll" ]; then
    echo "build_framework.sh: no CoreCLR 3.1.23 framework in $fw" >&2
    echo "(set ILREWRITE_DOTNET_ROOT to the directory holding dotnet)" >&2
    exit 1
fi
# Relative source names only, so no path of this machine can end up in a binary (the
# references are recorded by assembly name, not by path).
cd "$here"

runtimeconfig() {
    printf '{\n  "runtimeOptions": {\n    "framework": {\n      "name": "Microsoft.NETCore.App",\n      "version": "3.1.23"\n    }\n  }\n}\n' \
        >"$out/$1.runtimeconfig.json"
}

# fw_mcs TARGET OUTFILE SOURCE [assembly names...]: mcs against the framework.
fw_mcs() {
    target=$1
    outfile=$2
    source=$3
    shift 3
    refs=
    for name in System.Private.CoreLib "$@"; do
        refs="$refs -r:$fw/$name.dll"
    done
    # $refs is split on purpose (the framework path must not contain blanks).
    # shellcheck disable=SC2086
    mcs -nologo -nostdlib -target:"$target" -optimize+ -debug- -warnaserror+ $refs \
        -out:"$out/$outfile" "$source"
}

fw_mcs library UnloadPlugin.dll UnloadPlugin.cs
fw_mcs exe Unload.exe Unload.cs System.Runtime System.Runtime.Extensions System.Console
runtimeconfig Unload

#!/bin/sh
# A/B timing of two builds of the throughput example, for deciding whether a code change
# is faster.
#
#   tools/ab.sh STAGE ROUNDS BINARY_A BINARY_B
#
# Runs `BINARY --only STAGE -n 5` alternately ROUNDS times each and prints, per binary,
# the minimum, 10th percentile, 25th percentile and median of the per-run best times
# (ms). Alternating spreads changes in machine load over both; on a shared machine the
# low percentiles are the figures to compare.
#
# Build both sides with the same flags. On Intel CPUs with the JCC-erratum microcode
# (Skylake to Cascade Lake), a loop's speed depends on where its jumps fall relative to
# 32-byte boundaries, so two builds that differ in one function can differ by 5-10% in
# an unrelated loop. Building both sides with
#
#   RUSTFLAGS="-C llvm-args=-x86-align-branch-boundary=32 -C llvm-args=-x86-align-branch=fused+jcc+jmp"
#
# removes that effect and leaves the effect of the change. Example:
#
#   git stash; RUSTFLAGS="..." cargo build --release --features pe --example throughput
#   cp target/release/examples/throughput /tmp/tp_A; git stash pop
#   RUSTFLAGS="..." cargo build --release --features pe --example throughput
#   tools/ab.sh rewrite 20 /tmp/tp_A target/release/examples/throughput
set -eu
if [ $# -ne 4 ]; then
    echo "usage: $0 STAGE ROUNDS BINARY_A BINARY_B" >&2
    exit 2
fi
stage=$1 rounds=$2 a=$3 b=$4
i=0
while [ "$i" -lt "$rounds" ]; do
    for side in A B; do
        if [ "$side" = A ]; then bin=$a; else bin=$b; fi
        # The last line of the table is the stage's row; its third column is the best time.
        "$bin" --only "$stage" -n 5 2>/dev/null | tail -n 1 | awk -v s="$side" '{ print s, $3 }'
    done
    i=$((i + 1))
done | sort -k1,1 -k2,2n | awk '
    { v[$1, ++n[$1]] = $2 }
    END {
        for (s in n) {
            c = n[s]
            printf "%s  min %s  p10 %s  p25 %s  median %s  (%d runs)\n", s,
                v[s, 1], v[s, int(c / 10) + 1], v[s, int(c / 4) + 1], v[s, int(c / 2) + 1], c
        }
    }' | sort

#!/usr/bin/env bash
# Run every fuzz target for a while (default 10 s each, one job at a time).
# Committed: a few named seeds per target (seeds/<target>/) and minimised
# crash cases (regressions/<target>/). The working corpus, corpus/<target>/,
# is a cache that libFuzzer grows from them; it is git-ignored, so a fresh
# clone starts from the seeds. A crash fails the run and leaves its input
# under fuzz/artifacts/<target>/.
#
#   fuzz/smoke.sh [SECONDS] [TARGET...]
#
# The toolchain is stable; cargo-fuzz needs -Z flags, hence RUSTC_BOOTSTRAP.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-10}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(plan_markdown plan_json event_line beads_ready prompt)
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    dirs=("corpus/$t" "seeds/$t")
    [ -d "regressions/$t" ] && dirs+=("regressions/$t")
    # New inputs go to the first directory, the ignored working corpus;
    # seeds/ and regressions/ are only read.
    if ! cargo fuzz run "$t" "${dirs[@]}" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
        >"$work/$t.log" 2>&1; then
        tail -n 60 "$work/$t.log" >&2
        echo "fuzz/smoke.sh: $t FAILED (input under fuzz/artifacts/$t/)" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
    echo "fuzz/smoke.sh: $t ok, $runs runs in ${secs}s"
done

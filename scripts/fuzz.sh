#!/usr/bin/env bash
# Coverage-guided fuzzing of cgram's C API with cargo fuzz (libFuzzer).
#
#   scripts/fuzz.sh [--time SECONDS] [--jobs N] [--sanitizer none|address]
#                   [--keep-going] [--update-corpus] [TARGET...]
#
# Targets (all when none is named; the code is fuzz/harness.rs):
#   gbnf_compile         GBNF text compiled on a byte vocabulary, then walked
#   json_schema_compile  a JSON Schema, the same
#   regex_compile        a regex (CG_KIND_REGEX), and as a lazy trigger pattern
#   tokenizer_json       a tokenizer.json (+ config files) loaded, then used
#   matcher_drive        operations on matchers of a fixed grammar corpus,
#                        checking the mask invariants
#   json_schema_deadline a schema edited by structure-aware mutations
#                        (fuzz/schema_mutations.rs), compiled with the
#                        default 10 s deadline: past 15 s is a finding
#
# Builds the targets (nightly toolchain; installs cargo-fuzz when missing).
# For each target, N at a time (--jobs, default the number of cores: a
# libFuzzer process uses one), niced:
# 1. replays fuzz/regressions/<target>/ in the fuzz build: a reproducer
#    listed in fuzz/regressions/open.txt that still fails is reported as
#    open; any other that fails is a regression;
# 2. fuzzes for SECONDS (default 60) with -timeout=1 (an input over 1 s is
#    a finding; json_schema_deadline: 20 s, its harness's bound is 15 s) and -rss_limit_mb=2048, starting from the committed corpus
#    fuzz/corpus/<target>/ plus what earlier runs found (fuzz/work/<target>/,
#    git-ignored). libFuzzer stops at the first finding unless --keep-going
#    (-fork=1 with -ignore_crashes/timeouts/ooms: one fuzzing process still,
#    findings collected until the time is up).
# Prints per target the executions, exec/s, coverage (cov/ft), corpus size
# and the findings; a finding's input is in fuzz/artifacts/<target>/ (copy it
# to fuzz/regressions/<target>/ to keep it as a test:
# tests/fuzz_regressions.rs). Exits non-zero on any finding or regression
# (open findings alone do not count).
#
# --sanitizer: `none` (default: the fastest; the harness panics on any
# broken invariant and cgram is built with debug assertions and overflow
# checks) or `address` (AddressSanitizer + LeakSanitizer, about 3x slower).
# --update-corpus: afterwards, minimize the committed corpus together with
# the new inputs into fuzz/corpus/<target>/ (cargo fuzz cmin).
# Logs: fuzz/work/<target>.log. Extra libFuzzer flags: FUZZ_ARGS="...".
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/fuzz"

time_s=60
jobs="$(nproc 2>/dev/null || echo 1)"
sanitizer=none
update=0
keep_going=0
targets=()
all_targets=(gbnf_compile json_schema_compile regex_compile tokenizer_json matcher_drive json_schema_deadline gguf_vocab)

usage() { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --time) time_s="${2:?--time needs a value}"; shift 2 ;;
    --time=*) time_s="${1#*=}"; shift ;;
    --jobs) jobs="${2:?--jobs needs a value}"; shift 2 ;;
    --jobs=*) jobs="${1#*=}"; shift ;;
    --sanitizer) sanitizer="${2:?--sanitizer needs a value}"; shift 2 ;;
    --sanitizer=*) sanitizer="${1#*=}"; shift ;;
    --update-corpus) update=1; shift ;;
    --keep-going) keep_going=1; shift ;;
    -h|--help) usage ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target $t (${all_targets[*]})" >&2; exit 2; }
done
[[ "$time_s" =~ ^[0-9]+$ ]] && [ "$time_s" -gt 0 ] || { echo "fuzz.sh: --time takes seconds" >&2; exit 2; }
[[ "$jobs" =~ ^[0-9]+$ ]] && [ "$jobs" -gt 0 ] || { echo "fuzz.sh: --jobs takes a count" >&2; exit 2; }
case "$sanitizer" in none|address) ;; *) echo "fuzz.sh: --sanitizer none|address" >&2; exit 2 ;; esac

# The toolchain: nightly (libFuzzer's instrumentation needs -Z flags), and
# cargo-fuzz.
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz.sh: the Rust nightly toolchain is needed (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz"
  cargo install cargo-fuzz --version '^0.13' --locked || {
    echo "fuzz.sh: cargo install cargo-fuzz failed" >&2
    exit 1
  }
fi

# Per-target input size bounds (libFuzzer's -max_len): the seeds' sizes.
max_len() {
  case "$1" in
    gbnf_compile) echo 8192 ;;
    json_schema_compile) echo 16384 ;;
    regex_compile) echo 1024 ;;
    tokenizer_json) echo 32768 ;;
    matcher_drive) echo 512 ;;
    json_schema_deadline) echo 16640 ;;
    gguf_vocab) echo 32768 ;;
  esac
}

# Per-target libFuzzer -timeout (s), and the replay bound (ms) it implies.
timeout_s() {
  case "$1" in
    json_schema_deadline) echo 20 ;;
    *) echo 1 ;;
  esac
}

# fuzz/target/<sanitizer>, or <sanitizer>-fuzz under CARGO_TARGET_DIR when
# it is set (.ci/run keeps one between runs).
target_dir="target/$sanitizer"
[ -n "${CARGO_TARGET_DIR:-}" ] && target_dir="$CARGO_TARGET_DIR/$sanitizer-fuzz"
build=(cargo +nightly fuzz build --sanitizer "$sanitizer" --target-dir "$target_dir")
echo "fuzz.sh: building the targets (${build[*]})"
start=$SECONDS
if ! nice -n 10 "${build[@]}"; then
  echo "fuzz.sh: the build failed" >&2
  exit 1
fi
echo "fuzz.sh: built in $((SECONDS - start)) s"
bin_dir="$target_dir/$(rustc +nightly -vV | sed -n 's/^host: //p')/release"

mkdir -p work artifacts
summary=()
failed=0
# `target/file` entries of fuzz/regressions/open.txt.
open_list="$(sed 's/#.*//' regressions/open.txt 2>/dev/null | awk 'NF { print $1 }')"

# One target: its replays, its fuzzing run, its corpus update. Prints its
# report; writes its summary line to work/<target>.summary; fails on a
# finding or a regression.
fuzz_target() {
  local t="$1" status=0
  local log="work/$t.log" n_ok=0 n_open=0 n_bad=0 f ok ms mark code last execs eps secs rss cov ft corp kinds finding line
  local -a fork new
  echo
  echo "======== $t: $time_s s"

  # 1. The reproducers of earlier findings, in this build.
  for f in regressions/"$t"/*; do
    [ -f "$f" ] || continue
    # libFuzzer does not apply -timeout to inputs given as files: the time
    # it reports is checked here.
    ok=0
    if timeout 120 "$bin_dir/$t" -timeout="$(timeout_s "$t")" -rss_limit_mb=2048 "$f" >"work/$t.replay.log" 2>&1; then
      ms="$(sed -n 's/^Executed .* in \([0-9]*\) ms$/\1/p' "work/$t.replay.log" | tail -n 1)"
      if [ -n "$ms" ] && [ "$ms" -le $(($(timeout_s "$t") * 1000)) ]; then ok=1; else echo "took ${ms:-?} ms" >>"work/$t.replay.log"; fi
    fi
    if [ "$ok" = 1 ]; then
      n_ok=$((n_ok + 1))
    elif grep -qx "$t/$(basename "$f")" <<<"$open_list"; then
      n_open=$((n_open + 1))
    else
      n_bad=$((n_bad + 1))
      status=1
      echo "REGRESSION: $f fails again:"
      grep -m 1 -A 2 -E "panicked at|ERROR: libFuzzer|^took" "work/$t.replay.log" || true
    fi
  done
  echo "regressions: $n_ok pass, $n_open open (listed in open.txt), $n_bad regressed"

  # 2. Fuzzing.
  mark="$(mktemp)"
  fork=()
  [ "$keep_going" = 1 ] && fork=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  # shellcheck disable=SC2086
  timeout --kill-after=30 $((time_s + 600)) nice -n 10 "$bin_dir/$t" "${fork[@]}" \
    -max_total_time="$time_s" -timeout="$(timeout_s "$t")" -report_slow_units="$(timeout_s "$t")" -rss_limit_mb=2048 -max_len="$(max_len "$t")" \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" ${FUZZ_ARGS:-} \
    "work/$t" "corpus/$t" >"$log" 2>&1
  code=$?
  # Figures: libFuzzer's final stats, else (fork mode) its last status line.
  last="$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)"
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)"
  [ -n "$execs" ] || execs="$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")"
  eps="$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)"
  secs="$(sed -n 's/.* time: \([0-9]*\)s.*/\1/p' <<<"$last")"
  [ -n "$eps" ] || { [ -n "$execs" ] && [ -n "$secs" ] && [ "$secs" -gt 0 ] && eps=$((execs / secs)); }
  rss="$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)"
  cov="$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")"
  ft="$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")"
  corp="$(find "work/$t" "corpus/$t" -type f | wc -l)"
  # Findings: the artifacts this run wrote.
  mapfile -t new < <(find "artifacts/$t" -type f -newer "$mark" | sort)
  rm -f "$mark"
  kinds="$(for a in "${new[@]}"; do basename "$a" | cut -d- -f1; done | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $2; sep=", " }')"
  finding="${kinds:-none}"
  if [ ${#new[@]} -eq 0 ] && [ "$code" -ne 0 ]; then finding="exit $code"; fi
  if [ "$finding" != none ]; then
    status=1
    echo "FINDINGS ($finding); log $root/fuzz/$log:"
    printf '  %s\n' "${new[@]}"
    grep -m 3 -A 2 -E "panicked at|ERROR: libFuzzer: (timeout|out-of-memory)" "$log" || true
  fi
  line="$(printf '%-20s %10s execs %6s exec/s  cov %-6s ft %-7s corpus %-6s rss %5s MB  regressions %s/%s/%s  findings: %s' \
    "$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "$corp" "${rss:-?}" "$n_ok" "$n_open" "$n_bad" "$finding")"
  echo "$line" >"work/$t.summary"
  echo "$line"

  if [ "$update" = 1 ]; then
    echo "fuzz.sh: minimizing fuzz/corpus/$t with the new inputs"
    cp -n "work/$t"/* "corpus/$t"/ 2>/dev/null || true
    nice -n 10 cargo +nightly fuzz cmin --sanitizer "$sanitizer" --target-dir "$target_dir" "$t" "corpus/$t" \
      -- -timeout="$(timeout_s "$t")" -rss_limit_mb=2048 -max_len="$(max_len "$t")" >"work/$t.cmin.log" 2>&1 ||
      echo "fuzz.sh: cmin of $t failed: see fuzz/work/$t.cmin.log" >&2
    echo "fuzz.sh: fuzz/corpus/$t: $(find "corpus/$t" -type f | wc -l) files, $(du -sh "corpus/$t" | cut -f1)"
  fi
  return $status
}

# The targets, $jobs at a time (libFuzzer runs one process per target, a
# core each); each report is printed whole, in the order given.
declare -A pid_of
for t in "${targets[@]}"; do
  mkdir -p "work/$t" "corpus/$t" "artifacts/$t"
  rm -f "work/$t.summary"
  while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_target "$t" >"work/$t.report" 2>&1 &
  pid_of[$t]=$!
done
for t in "${targets[@]}"; do
  wait "${pid_of[$t]}" || failed=1
  cat "work/$t.report"
  summary+=("$(cat "work/$t.summary" 2>/dev/null || echo "$t: no summary (see fuzz/work/$t.report)")")
done

echo
echo "fuzz.sh summary ($time_s s per target, $jobs at a time, sanitizer $sanitizer, keep-going $keep_going, $(git -C "$root" rev-parse --short HEAD 2>/dev/null)); regressions pass/open/regressed:"
printf '  %s\n' "${summary[@]}"
exit $failed

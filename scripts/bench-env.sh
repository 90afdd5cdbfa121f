# Sourced by every scripts/bench* script: where a benchmark's private control plane lives.
#
#   DRIFT_BENCH_ENV_DIR=DIR   the one variable every benchmark reads: its control plane's state in
#                             DIR (scripts/test-env's DRIFT_ENV_DIR). DIR must not hold a running
#                             environment: a benchmark refuses to start rather than reuse, or stop at
#                             its end, an environment someone else started there.
#   (unset)                   a private directory per run, ${TMPDIR:-/tmp}/kubectl-drift-bench-NAME-PID,
#                             so two benchmarks, or a benchmark and the tests, never share one.
#
# DRIFT_ENV_DIR from the caller's environment (an `eval "$(scripts/test-env env)"` shell) is never
# used: a benchmark starts its own control plane and stops it when it ends (its EXIT trap).
#
# bench_env NAME: export DRIFT_ENV_DIR for the benchmark NAME, as above; exits 2 when
# DRIFT_BENCH_ENV_DIR already runs an environment.
bench_env() {
  local name="$1"
  if [[ -n "${DRIFT_BENCH_ENV_DIR:-}" ]]; then
    if DRIFT_ENV_DIR="$DRIFT_BENCH_ENV_DIR" scripts/test-env status >/dev/null 2>&1; then
      printf 'bench: error: DRIFT_BENCH_ENV_DIR=%s already runs an environment; stop it (DRIFT_ENV_DIR=%s scripts/test-env down) or choose another directory\n' \
        "$DRIFT_BENCH_ENV_DIR" "$DRIFT_BENCH_ENV_DIR" >&2
      exit 2
    fi
    export DRIFT_ENV_DIR="$DRIFT_BENCH_ENV_DIR"
  else
    export DRIFT_ENV_DIR="${TMPDIR:-/tmp}/kubectl-drift-bench-$name-$$"
  fi
}

# Shared helpers for the shell runners of the client suite (sourced, not run).
# The suite's entry point, scripts/test-clients.sh, exports:
#   SLUICE_BOOTSTRAP    host:port of the broker under test
#   SLUICE_APIS         comma-separated API keys the broker advertises
#   SLUICE_RESULTS_DIR  where each runner writes <client>.jsonl
#   SLUICE_RUN_ID       a short token to keep topic and group names unique per run
#   SLUICE_CLIENTS_COMPACTION  1 to also wait for the cleaner in the examples
#   SLUICE_SASL_SSL_BOOTSTRAP, SLUICE_SASL_PLAINTEXT_BOOTSTRAP, SLUICE_CA_PEM,
#   SLUICE_SASL_PLAIN_USER, SLUICE_SASL_PLAIN_PASSWORD  the security listeners (unset: skip those tests)
# A runner may set SUITE_RESULTS_FILE to write all its results to one file
# (default: $SLUICE_RESULTS_DIR/<client>.jsonl).

: "${SLUICE_BOOTSTRAP:?set by scripts/test-clients.sh}"
: "${SLUICE_RESULTS_DIR:?set by scripts/test-clients.sh}"
SLUICE_RUN_ID=${SLUICE_RUN_ID:-$$}
SLUICE_APIS=${SLUICE_APIS:-}
SUITE_FAILED=0

# json_string VALUE: VALUE as a JSON string literal.
json_string() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/\\r}
  s=${s//$'\t'/\\t}
  s=$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')
  printf '"%s"' "$s"
}

# client_version CLIENT VERSION: describe the client once in the results.
client_version() {
  printf '{"client":%s,"client_version":%s}\n' "$(json_string "$1")" "$(json_string "$2")" \
    >>"${SUITE_RESULTS_FILE:-$SLUICE_RESULTS_DIR/$1.jsonl}"
}

# record CLIENT TEST FEATURE STATUS DETAIL MS: append one result and echo it.
record() {
  printf '{"client":%s,"test":%s,"feature":%s,"status":%s,"detail":%s,"ms":%d}\n' \
    "$(json_string "$1")" "$(json_string "$2")" "$(json_string "$3")" "$(json_string "$4")" \
    "$(json_string "$5")" "$6" >>"${SUITE_RESULTS_FILE:-$SLUICE_RESULTS_DIR/$1.jsonl}"
  local up
  up=$(printf '%s' "$4" | tr '[:lower:]' '[:upper:]')
  if [ -n "$5" ]; then echo "$up $1/$2: $5"; else echo "$up $1/$2"; fi
  if [ "$4" = fail ]; then SUITE_FAILED=1; fi
}

# missing_apis KEY...: print the keys the broker does not advertise.
missing_apis() {
  local k out=""
  for k in "$@"; do
    case ",$SLUICE_APIS," in *",$k,"*) ;; *) out="$out $k" ;; esac
  done
  printf '%s' "${out# }"
}

now_ms() { date +%s%3N; }

# run_test CLIENT TEST FEATURE "API..." FUNCTION: run FUNCTION (no arguments)
# and record pass when it returns 0, fail with its last output line otherwise,
# or skip when the broker does not advertise one of the APIs. FUNCTION's
# output goes to the console; its last line is the failure detail.
run_test() {
  local client=$1 test=$2 feature=$3 apis=$4 fn=$5 missing start rc out
  # shellcheck disable=SC2086
  missing=$(missing_apis $apis)
  if [ -n "$missing" ]; then
    record "$client" "$test" "$feature" skip "broker does not advertise $missing" 0
    return 0
  fi
  start=$(now_ms)
  out=$(mktemp)
  set +e
  ( set -euo pipefail; "$fn" ) >"$out" 2>&1
  rc=$?
  set -e
  sed 's/^/    /' "$out"
  if [ $rc -eq 0 ]; then
    record "$client" "$test" "$feature" pass "" $(( $(now_ms) - start ))
  else
    record "$client" "$test" "$feature" fail "$(grep -v '^[[:space:]]*$' "$out" | tail -n 1) (exit $rc)" $(( $(now_ms) - start ))
  fi
  rm -f "$out"
}

# run_test_with_env CLIENT TEST FEATURE "API..." "VAR..." FUNCTION: run_test, or record a skip when
# one of the environment variables VAR is unset or empty (a listener the broker under test lacks).
run_test_with_env() {
  local v unset=""
  for v in $5; do
    [ -n "${!v:-}" ] || unset="$unset $v"
  done
  if [ -n "$unset" ]; then
    record "$1" "$2" "$3" skip "not set:$unset (no such listener)" 0
    return 0
  fi
  run_test "$1" "$2" "$3" "$4" "$6"
}

# fail MESSAGE: print MESSAGE and return 1 (ends a test function under set -e).
fail() { echo "$*"; return 1; }

# expect_eq WHAT WANT GOT
expect_eq() {
  if [ "$2" != "$3" ]; then
    printf '%s: want %q, got %q\n' "$1" "$2" "$3"
    return 1
  fi
}

# expect_lines WHAT WANT GOT: compare multi-line text; on a difference print
# the first lines of the diff and a one-line summary, and return 1.
expect_lines() {
  if [ "$2" != "$3" ]; then
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | head -n 12 || true
    printf '%s: %d lines differ from the %d expected (got %d lines)\n' "$1" \
      "$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | grep -c '^>' || true)" \
      "$(printf '%s\n' "$2" | grep -c . || true)" "$(printf '%s\n' "$3" | grep -c . || true)"
    return 1
  fi
}

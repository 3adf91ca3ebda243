#!/usr/bin/env bash
# kcat (librdkafka) scenarios: the README quick start (keys, a tombstone with -Z),
# metadata listing, every compression codec, an idempotent producer, a balanced
# (group) consumer, and SASL/PLAIN over the SASL_SSL listener (and a wrong password,
# refused). Topics are auto-created by the first produce, as in the README. Run by
# scripts/test-clients.sh; results go to $SLUICE_RESULTS_DIR/kcat.jsonl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

B=$SLUICE_BOOTSTRAP
P="kcat-$SLUICE_RUN_ID"
KCAT=(timeout 60 kcat -b "$B" -X socket.timeout.ms=10000)

client_version kcat "$(kcat -V 2>&1 | sed -n 's/^Version \([^ ]*\) .*librdkafka \([^ ]*\) .*/\1 (librdkafka \2)/p')"

t_metadata() {
  local out
  out=$("${KCAT[@]}" -L -J)
  echo "$out"
  case "$out" in *"\"name\":\"$B\""*) ;; *) fail "kcat -L -J does not list broker $B" ;; esac
}

QS="$P-user-profiles"
qs_out=""
t_quickstart_produce() {
  printf 'user-42:v1\nuser-42:v2\nuser-7:\n' | "${KCAT[@]}" -P -t "$QS" -Z -K:
}
# The consume is shared by the two checks after it.
consume_quickstart() {
  "${KCAT[@]}" -C -t "$QS" -o beginning -c 3 -e -Z -f '%p %o %k=%s %S\n'
}
t_quickstart_consume() {
  local got
  got=$(consume_quickstart)
  echo "$got"
  expect_eq "first two records" $'0 0 user-42=v1 2\n0 1 user-42=v2 2' "$(printf '%s\n' "$got" | head -n 2)"
}
t_quickstart_tombstone() {
  local got
  got=$(consume_quickstart | sed -n 3p)
  # -Z prints a null value as NULL; %S is the value size, -1 for null.
  expect_eq "tombstone" "0 2 user-7=NULL -1" "$got"
}
t_topic_listed() {
  local out
  out=$("${KCAT[@]}" -L -t "$QS" -J)
  echo "$out"
  case "$out" in *"\"topic\":\"$QS\""*) ;; *) fail "kcat -L -t $QS does not list the topic" ;; esac
  case "$out" in *'"partitions":[{"partition":0'*) ;; *) fail "topic $QS has no partition 0" ;; esac
}

# codec_roundtrip CODEC: 200 keyed records, one compressed batch, read back verbatim.
codec_roundtrip() {
  local codec=$1 t="$P-codec-$1" want got
  want=$(seq 1 200 | sed "s/.*/k&:value-&-$codec-with-some-repetition-repetition-repetition/")
  printf '%s\n' "$want" | "${KCAT[@]}" -P -t "$t" -p 0 -K: -z "$codec" -X linger.ms=50
  got=$("${KCAT[@]}" -C -t "$t" -p 0 -o beginning -c 200 -e -f '%k:%s\n')
  expect_lines "$codec records" "$want" "$got"
}
t_gzip() { codec_roundtrip gzip; }
t_snappy() { codec_roundtrip snappy; }
t_lz4() { codec_roundtrip lz4; }
t_zstd() { codec_roundtrip zstd; }

t_idempotent() {
  local t="$P-idempotent" got
  seq 1 50 | sed 's/.*/k&:v&/' | "${KCAT[@]}" -P -t "$t" -p 0 -K: -X enable.idempotence=true -X acks=all
  got=$("${KCAT[@]}" -C -t "$t" -p 0 -o beginning -c 50 -e -f '%o %k=%s\n')
  expect_lines "idempotent records" "$(seq 0 49 | awk '{print $1" k"$1+1"=v"$1+1}')" "$got"
}

t_group() {
  local t="$P-group" got
  printf 'a:1\nb:2\nc:3\n' | "${KCAT[@]}" -P -t "$t" -K:
  got=$("${KCAT[@]}" -G "$P-group" -X auto.offset.reset=earliest -c 3 -f '%k=%s\n' "$t" 2>/dev/null | sort)
  expect_eq "group consumer records" $'a=1\nb=2\nc=3' "$got"
}

# The README's quick start, run as written: the first sh block under "Quick start with kcat",
# pointed at this run's broker ($SLUICE_BOOTSTRAP is also what `sluice topic` reads), this run's
# binary instead of `go run ./cmd/sluice`, and a topic name of its own.
t_readme_quickstart() {
  local block got topic="$P-readme"
  block=$(awk '/^## Quick start with kcat/{q=1} q&&/^```sh/{f=1;next} f&&/^```/{exit} f' "$here/../../../README.md")
  [ -n "$block" ] || fail "README.md has no sh block under 'Quick start with kcat'"
  case "$block" in *"go run ./cmd/sluice topic create quickstart-profiles"*"kcat -b localhost:9092 -C"*) ;;
    *) fail "the README quick start no longer creates quickstart-profiles and consumes it with kcat:"$'\n'"$block" ;; esac
  block=${block//localhost:9092/$B}
  block=${block//go run .\/cmd\/sluice/\"\$SLUICE_BIN\"}
  block=${block//quickstart-profiles/$topic}
  echo "$block"
  got=$(timeout 60 bash -euo pipefail -c "$block")
  echo "$got"
  expect_eq "README quick start output" $'created topic '"$topic"$' (1 partition)\n0 user-42=v1\n1 user-42=v2\n2 user-7=NULL' "$got"
}

# ---- security: the SASL_SSL listener ($SLUICE_SASL_SSL_BOOTSTRAP, CA in $SLUICE_CA_PEM) ----------

# kcat_sasl_ssl PASSWORD ARGS...: kcat on the SASL_SSL listener as the PLAIN user with PASSWORD.
kcat_sasl_ssl() {
  local pass=$1
  shift
  timeout 60 kcat -b "$SLUICE_SASL_SSL_BOOTSTRAP" -X socket.timeout.ms=10000 -X security.protocol=SASL_SSL \
    -X sasl.mechanisms=PLAIN -X sasl.username="$SLUICE_SASL_PLAIN_USER" -X sasl.password="$pass" \
    -X ssl.ca.location="$SLUICE_CA_PEM" "$@"
}

t_sasl_plain_ssl() {
  local t="$P-sasl-plain-ssl" want got md
  want=$'k1:v1\nk2:v2\nk3:tls and sasl'
  printf '%s\n' "$want" | kcat_sasl_ssl "$SLUICE_SASL_PLAIN_PASSWORD" -P -t "$t" -p 0 -K:
  got=$(kcat_sasl_ssl "$SLUICE_SASL_PLAIN_PASSWORD" -C -t "$t" -p 0 -o beginning -c 3 -e -f '%k:%s\n')
  expect_lines "records over SASL_SSL" "$want" "$got"
  # The listener a client came through is the one Metadata advertises.
  md=$(kcat_sasl_ssl "$SLUICE_SASL_PLAIN_PASSWORD" -L -J -t "$t")
  echo "$md"
  case "$md" in *"\"name\":\"$SLUICE_SASL_SSL_BOOTSTRAP\""*) ;;
    *) fail "Metadata on the SASL_SSL listener does not advertise $SLUICE_SASL_SSL_BOOTSTRAP" ;; esac
}

t_sasl_wrong_password() {
  local out start
  start=$(now_ms)
  if out=$(kcat_sasl_ssl "not-$SLUICE_SASL_PLAIN_PASSWORD" -L -m 3 2>&1); then
    echo "$out"
    fail "kcat -L with a wrong password succeeded"
  fi
  echo "$out"
  case "$out" in *"SASL authentication error: Authentication failed"*) ;;
    *) fail "kcat -L with a wrong password did not report the SASL authentication failure" ;; esac
  # Refused at once (librdkafka reports every failed attempt), not left to time out at 60 s.
  [ $(( $(now_ms) - start )) -lt 20000 ] || fail "kcat with a wrong password took $(( $(now_ms) - start )) ms to give up"
}

# SCRAM-SHA-256 over SASL_SSL with a user made through the PLAINTEXT listener (kcat has no admin API).
# Debian's kcat links a librdkafka older than 2.6.1, whose client-final nonce is malformed; Sluice
# accepts it as Kafka 3.9 did, so this also guards that.
t_sasl_scram_ssl() {
  local t="$P-sasl-scram-ssl" user="$P-kcat-scram" pass="kcat-scram-secret" want got
  "$SLUICE_HARNESS" scram-user -bootstrap "$SLUICE_BOOTSTRAP" -user "$user" -password "$pass" \
    -mechanism SCRAM-SHA-256 || fail "could not create the SCRAM user"
  kscram() {
    timeout 60 kcat -b "$SLUICE_SASL_SSL_BOOTSTRAP" -X socket.timeout.ms=10000 -X security.protocol=SASL_SSL \
      -X sasl.mechanisms=SCRAM-SHA-256 -X sasl.username="$user" -X sasl.password="$pass" \
      -X ssl.ca.location="$SLUICE_CA_PEM" "$@"
  }
  want=$'s1:scram one\ns2:scram two'
  printf '%s\n' "$want" | kscram -P -t "$t" -p 0 -K:
  got=$(kscram -C -t "$t" -p 0 -o beginning -c 2 -e -f '%k:%s\n')
  expect_lines "records over SASL_SSL with SCRAM-SHA-256" "$want" "$got"
}

# OAUTHBEARER over SASL_PLAINTEXT with librdkafka's unsecured JWT, then with its OIDC client-credentials
# login on the OAUTH listener (JWT signed by the harness's OAuth provider, checked against its JWKS).
t_oauth_unsecured() {
  local t="$P-oauth-unsecured" want got
  kunsec() {
    timeout 60 kcat -b "$SLUICE_SASL_PLAINTEXT_BOOTSTRAP" -X socket.timeout.ms=10000 -X security.protocol=SASL_PLAINTEXT \
      -X sasl.mechanisms=OAUTHBEARER -X enable.sasl.oauthbearer.unsecure.jwt=true \
      -X sasl.oauthbearer.config="principal=alice" "$@"
  }
  "$SLUICE_HARNESS" create-topic -bootstrap "$SLUICE_BOOTSTRAP" -topic "$t" || fail "could not create $t"
  want=$'o1:unsecured one\no2:unsecured two'
  printf '%s\n' "$want" | kunsec -P -t "$t" -p 0 -K:
  got=$(kunsec -C -t "$t" -p 0 -o beginning -c 2 -e -f '%k:%s\n')
  expect_lines "records over SASL_PLAINTEXT with unsecured OAUTHBEARER" "$want" "$got"
}

t_oauth_oidc() {
  local t="$P-oauth-oidc" want got
  koidc() {
    LD_LIBRARY_PATH=${oidc_libs:-${LD_LIBRARY_PATH:-}} timeout 60 kcat -b "$SLUICE_OAUTH_BOOTSTRAP" -X socket.timeout.ms=10000 -X security.protocol=SASL_PLAINTEXT \
      -X sasl.mechanisms=OAUTHBEARER -X sasl.oauthbearer.method=oidc \
      -X sasl.oauthbearer.token.endpoint.url="$SLUICE_OAUTH_TOKEN_URL" \
      -X sasl.oauthbearer.client.id="$SLUICE_OAUTH_CLIENT_ID" \
      -X sasl.oauthbearer.client.secret="$SLUICE_OAUTH_CLIENT_SECRET" "$@"
  }
  "$SLUICE_HARNESS" create-topic -bootstrap "$SLUICE_BOOTSTRAP" -topic "$t" || fail "could not create $t"
  want=$'i1:oidc one\ni2:oidc two'
  printf '%s\n' "$want" | koidc -P -t "$t" -p 0 -K:
  got=$(koidc -C -t "$t" -p 0 -o beginning -c 2 -e -f '%k:%s\n')
  expect_lines "records over the OAUTH listener with an OIDC token" "$want" "$got"
}

run_test kcat metadata metadata "Metadata" t_metadata
run_test kcat readme-quickstart produce.tombstone "CreateTopics Produce Fetch ListOffsets" t_readme_quickstart
run_test kcat quickstart-produce produce "Produce" t_quickstart_produce
run_test kcat quickstart-consume consume.from-beginning "Produce Fetch ListOffsets" t_quickstart_consume
run_test kcat quickstart-tombstone produce.tombstone "Produce Fetch ListOffsets" t_quickstart_tombstone
run_test kcat topic-listed metadata "Metadata Produce" t_topic_listed
run_test kcat gzip compression.gzip "Produce Fetch ListOffsets" t_gzip
run_test kcat snappy compression.snappy "Produce Fetch ListOffsets" t_snappy
run_test kcat lz4 compression.lz4 "Produce Fetch ListOffsets" t_lz4
run_test kcat zstd compression.zstd "Produce Fetch ListOffsets" t_zstd
run_test kcat idempotent-producer produce.idempotent "Produce Fetch ListOffsets InitProducerID" t_idempotent
run_test kcat group-consumer group.classic "Produce Fetch FindCoordinator JoinGroup SyncGroup Heartbeat OffsetCommit OffsetFetch" t_group
SASL_SSL_ENV="SLUICE_SASL_SSL_BOOTSTRAP SLUICE_CA_PEM SLUICE_SASL_PLAIN_USER SLUICE_SASL_PLAIN_PASSWORD"
run_test_with_env kcat security-sasl-plain-ssl security.sasl-plain-ssl \
  "SASLHandshake SASLAuthenticate Metadata Produce Fetch ListOffsets" "$SASL_SSL_ENV" t_sasl_plain_ssl
run_test_with_env kcat security-scram-ssl security.scram \
  "SASLHandshake SASLAuthenticate AlterUserSCRAMCredentials Metadata Produce Fetch ListOffsets" \
  "$SASL_SSL_ENV SLUICE_HARNESS" t_sasl_scram_ssl
run_test_with_env kcat security-wrong-password security.wrong-password \
  "SASLHandshake SASLAuthenticate" "$SASL_SSL_ENV" t_sasl_wrong_password
run_test_with_env kcat security-oauthbearer-unsecured security.oauthbearer-unsecured \
  "SASLHandshake SASLAuthenticate CreateTopics Metadata Produce Fetch ListOffsets" \
  "SLUICE_SASL_PLAINTEXT_BOOTSTRAP SLUICE_HARNESS" t_oauth_unsecured
# Debian's kcat links a librdkafka built without OIDC (it needs libcurl). The confluent-kafka wheel the suite
# installs (SLUICE_CLIENTS_VENV) bundles a librdkafka built with it, under the same soname: kcat then runs the
# OIDC scenario on that library (LD_LIBRARY_PATH), and is skipped only when neither has OIDC.
oidc_libs=""
if ! kcat -X sasl.oauthbearer.method=oidc -X list >/dev/null 2>&1; then
  wheel_lib=$(ls "${SLUICE_CLIENTS_VENV:-/nonexistent}"/lib/python3*/site-packages/confluent_kafka.libs/librdkafka-*.so.1 \
    2>/dev/null | head -n 1 || true)
  if [ -n "$wheel_lib" ]; then
    oidc_libs=$(mktemp -d "${TMPDIR:-/tmp}/kcat-oidc.XXXXXX")
    ln -s "$wheel_lib" "$oidc_libs/librdkafka.so.1"
    if LD_LIBRARY_PATH=$oidc_libs kcat -X sasl.oauthbearer.method=oidc -X list >/dev/null 2>&1; then
      echo "kcat OIDC scenario: on the librdkafka of the confluent-kafka wheel ($wheel_lib); Debian's has no OIDC"
    else
      rm -rf "$oidc_libs"; oidc_libs=""
    fi
  fi
fi
if [ -n "$oidc_libs" ] || kcat -X sasl.oauthbearer.method=oidc -X list >/dev/null 2>&1; then
  run_test_with_env kcat security-oauthbearer-oidc security.oauthbearer-oidc \
    "SASLHandshake SASLAuthenticate CreateTopics Metadata Produce Fetch ListOffsets" \
    "SLUICE_OAUTH_BOOTSTRAP SLUICE_OAUTH_TOKEN_URL SLUICE_OAUTH_CLIENT_ID SLUICE_OAUTH_CLIENT_SECRET SLUICE_HARNESS" t_oauth_oidc
else
  record kcat security-oauthbearer-oidc security.oauthbearer-oidc skip \
    "this kcat's librdkafka was built without OIDC support (sasl.oauthbearer.method=oidc needs libcurl), and no confluent-kafka wheel's librdkafka was found (SLUICE_CLIENTS_VENV)" 0
fi
if [ -n "$oidc_libs" ]; then rm -rf "$oidc_libs"; fi

exit $SUITE_FAILED

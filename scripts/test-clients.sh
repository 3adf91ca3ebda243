#!/usr/bin/env bash
# Real-client conformance suite (test/clients/): installs the clients it needs (kcat from Debian,
# confluent-kafka, kafka-python and aiokafka from PyPI into a cached venv, kafkajs from npm; kafka-clients 4.x and 3.9, Kafka's
# command-line tools, Kafka Streams and Kafka Connect from Maven Central), builds Sluice, starts it
# with a temporary data dir and four loopback listeners (PLAINTEXT, SASL_SSL and SASL_PLAINTEXT, with a
# throw-away CA from `harness certs`, and OAUTH: OAUTHBEARER against `harness oauth-server`, an OAuth
# provider on loopback) and, for the security.acls scenarios, a second broker with the authorizer on
# (SLUICE_ACL_*), runs every client's scenarios against them, stops them,
# writes test/clients/results.json (git-ignored; with --write-docs after a full run also
# docs/compatibility.md, so a plain test run leaves tracked files unchanged) and ends with the
# line "N passed, N failed[, N skipped]". Exits non-zero when any scenario failed.
#
# Usage: scripts/test-clients.sh [--only GROUP,...] [--compaction] [--strict] [--bootstrap HOST:PORT] [--keep] [--write-docs]
#   --only        run only these groups (default: all): kcat, python, java, java39, kafkajs,
#                 kafka-tools, kafka-streams, kafka-connect, examples
#   --compaction  the examples also wait for the cleaner and check the compacted log
#                 (also SLUICE_CLIENTS_COMPACTION=1)
#   --strict      count skipped scenarios (API not advertised by the broker) as failures
#   --bootstrap   test an already running broker instead of building and starting Sluice; its
#                 security scenarios run only when SLUICE_SASL_SSL_BOOTSTRAP (with SLUICE_CA_PEM)
#                 and/or SLUICE_SASL_PLAINTEXT_BOOTSTRAP are set (PLAIN user: SLUICE_SASL_PLAIN_USER /
#                 SLUICE_SASL_PLAIN_PASSWORD, default alice / alice-secret; SCRAM users are created
#                 through the PLAINTEXT bootstrap; OAuth: SLUICE_OAUTH_BOOTSTRAP, SLUICE_OAUTH_TOKEN_URL,
#                 SLUICE_OAUTH_CLIENT_ID, SLUICE_OAUTH_CLIENT_SECRET, SLUICE_OAUTH_REAUTH_MS)
#   --keep        keep the temporary directory (broker log, data dir, raw results)
#   --write-docs  after a full run, regenerate docs/compatibility.md from the results (commit it
#                 from a green run)
# Caches: SLUICE_CLIENTS_CACHE (default ~/.cache/sluice-clients) holds the Python venv and pip cache;
# Maven and npm use their usual caches (~/.m2, ~/.npm). Per-group time limit: SLUICE_CLIENTS_GROUP_TIMEOUT
# seconds (default 300).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CLIENTS=$ROOT/test/clients

all_groups="kcat,python,java,java39,kafkajs,kafka-tools,kafka-streams,kafka-connect,examples"
only=$all_groups
strict=""
keep=""
write_docs=""
external=""
export SLUICE_CLIENTS_COMPACTION=${SLUICE_CLIENTS_COMPACTION:-1}
while [ $# -gt 0 ]; do
  case $1 in
    --only) only=$2; shift 2 ;;
    --compaction) SLUICE_CLIENTS_COMPACTION=1; shift ;;
    --strict) strict="-strict"; shift ;;
    --bootstrap) external=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --write-docs) write_docs=1; shift ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
wanted() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

CACHE=${SLUICE_CLIENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice-clients}
GROUP_TIMEOUT=${SLUICE_CLIENTS_GROUP_TIMEOUT:-300}
mkdir -p "$CACHE"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sluice-clients.XXXXXX")
RESULTS_DIR=$WORK/results
mkdir -p "$RESULTS_DIR"
BROKER_PID=""
ACL_BROKER_PID=""
OAUTH_PID=""

cleanup() {
  if [ -n "$OAUTH_PID" ]; then kill -TERM "$OAUTH_PID" 2>/dev/null || true; fi
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -TERM "$BROKER_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$BROKER_PID" 2>/dev/null || true
  fi
  if [ -n "$ACL_BROKER_PID" ] && kill -0 "$ACL_BROKER_PID" 2>/dev/null; then
    kill -TERM "$ACL_BROKER_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$ACL_BROKER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$ACL_BROKER_PID" 2>/dev/null || true
  fi
  if [ -n "$keep" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

section() { printf '\n== %s\n' "$*"; }
elapsed() { echo "$(( $(date +%s) - $1 ))s"; }

# group_failure CLIENT DETAIL: one failed result standing for a whole group that could not run.
group_failure() {
  local d=${2//\\/\\\\}; d=${d//\"/\\\"}
  printf '{"client":"%s","test":"setup","feature":"setup","status":"fail","detail":"%s","ms":0}\n' "$1" "$d" \
    >>"$RESULTS_DIR/$1.jsonl"
  echo "FAIL $1/setup: $2"
}

# ---- installs (idempotent, quick when already done) -------------------------------------------

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else return 1; fi; }

ensure_kcat() {
  command -v kcat >/dev/null && return 0
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get install -y -q kcat >"$WORK/apt.log" 2>&1 && return 0
  as_root apt-get update -q >>"$WORK/apt.log" 2>&1 && as_root apt-get install -y -q kcat >>"$WORK/apt.log" 2>&1 && return 0
  tail -n 5 "$WORK/apt.log"
  return 1
}

VENV=$CACHE/venv
ensure_python() {
  local stamp want
  want="$(sha256sum "$CLIENTS/python/requirements.txt" | cut -c1-16) $(python3 -V 2>&1)"
  stamp=$(cat "$VENV/.sluice-stamp" 2>/dev/null || true)
  [ "$stamp" = "$want" ] && [ -x "$VENV/bin/python" ] && return 0
  python3 -m venv --clear "$VENV" >"$WORK/pip.log" 2>&1 &&
    PIP_CACHE_DIR=$CACHE/pip "$VENV/bin/pip" install -q --disable-pip-version-check \
      -r "$CLIENTS/python/requirements.txt" >>"$WORK/pip.log" 2>&1 &&
    echo "$want" >"$VENV/.sluice-stamp" && return 0
  tail -n 5 "$WORK/pip.log"
  return 1
}

ensure_kafkajs() {
  local dir=$CLIENTS/kafkajs want
  want=$(sha256sum "$dir/package-lock.json" | cut -c1-16)
  [ "$(cat "$dir/node_modules/.sluice-stamp" 2>/dev/null || true)" = "$want" ] && return 0
  (cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) >"$WORK/npm.log" 2>&1 &&
    echo "$want" >"$dir/node_modules/.sluice-stamp" && return 0
  tail -n 5 "$WORK/npm.log"
  return 1
}

# ensure_java PROFILE: compiles test/clients/java with that Maven profile (see its pom.xml) and prints
# the classpath to run it with. Profiles: clients (kafka-clients 4.x, target/), apps (kafka-tools and
# kafka-streams, target/apps/), connect (connect-runtime + connect-file, target/connect/), kafka39
# (kafka-clients 3.9, target/kafka39/).
ensure_java() {
  local profile=$1 dir=$CLIENTS/java out log=$WORK/mvn-$1.log
  case $profile in clients) out=target ;; *) out=target/$profile ;; esac
  local goals=(-P "$profile" compile dependency:build-classpath "-Dmdep.outputFile=$out/classpath.txt")
  command -v mvn >/dev/null && command -v java >/dev/null || { echo "mvn or java not installed"; return 1; }
  mkdir -p "$dir/$out"
  # Offline first: quick and quiet when ~/.m2 already has everything; online otherwise.
  (cd "$dir" && { mvn -q -B -o "${goals[@]}" >"$log" 2>&1 || mvn -q -B "${goals[@]}" >"$log" 2>&1; }) || {
    grep -E 'ERROR' "$log" | head -n 5
    return 1
  }
  echo "$dir/$out/classes:$(cat "$dir/$out/classpath.txt")"
}
JAVA_CP="" JAVA39_CP="" APPS_CP="" CONNECT_CP=""

# ---- build and start the broker ---------------------------------------------------------------

t0=$(date +%s)
section "build"
go build -o "$WORK/harness" ./test/clients/harness
# Built even for an external broker: the README quick start (kcat group) uses its `topics` client command.
go build -o "$WORK/sluice" ./cmd/sluice
BROKER_VERSION="external"
if [ -z "$external" ]; then
  BROKER_VERSION=$("$WORK/sluice" --version 2>/dev/null | head -n 1 || echo unknown)
fi
if wanted examples; then go build -o "$WORK/example-go" ./examples/compacted-topics/go; fi
echo "built in $(elapsed "$t0")"

section "install clients"
declare -A SETUP_ERR=()
t=$(date +%s)
if wanted kcat || wanted examples; then out=$(ensure_kcat 2>&1) || SETUP_ERR[kcat]="kcat not installable: ${out:-see apt log}"; fi
if wanted python || wanted examples; then out=$(ensure_python 2>&1) || SETUP_ERR[python]="pip install of test/clients/python/requirements.txt failed: $out"; fi
if wanted kafkajs || wanted examples; then out=$(ensure_kafkajs 2>&1) || SETUP_ERR[kafkajs]="npm ci failed: $out"; fi
if wanted java || wanted examples; then
  JAVA_CP=$(ensure_java clients 2>&1) || { SETUP_ERR[java]="maven build failed: $JAVA_CP"; JAVA_CP=""; }
fi
if wanted java39; then
  JAVA39_CP=$(ensure_java kafka39 2>&1) || SETUP_ERR[java39]="maven build (profile kafka39) failed: $JAVA39_CP"
fi
if wanted kafka-tools || wanted kafka-streams; then
  APPS_CP=$(ensure_java apps 2>&1) || {
    SETUP_ERR[kafka-tools]="maven build (profile apps) failed: $APPS_CP"; SETUP_ERR[kafka-streams]=${SETUP_ERR[kafka-tools]}
  }
fi
if wanted kafka-connect; then
  CONNECT_CP=$(ensure_java connect 2>&1) || SETUP_ERR[kafka-connect]="maven build (profile connect) failed: $CONNECT_CP"
fi
echo "clients ready in $(elapsed "$t")"

section "start broker"
if [ -n "$external" ]; then
  BOOTSTRAP=$external
else
  # Four listeners: PLAINTEXT (BOOTSTRAP, what every scenario but the security ones uses), SASL_SSL
  # and SASL_PLAINTEXT, with a throw-away CA, PLAIN users in sasl.jaas.config, SCRAM enabled and (on
  # SASL_PLAINTEXT) OAUTHBEARER with the unsecured validator; and OAUTH (SASL_PLAINTEXT, OAUTHBEARER only)
  # validating signed JWTs against the JWKS of the harness's OAuth provider on loopback, whose sessions
  # last 5 s (connections.max.reauth.ms: the clients must re-authenticate).
  read -r PORT SASL_SSL_PORT SASL_PLAINTEXT_PORT OAUTH_PORT OAUTH_SERVER_PORT <<<"$("$WORK/harness" freeport -n 5 | tr '\n' ' ')"
  BOOTSTRAP=127.0.0.1:$PORT
  "$WORK/harness" certs -dir "$WORK/tls" >/dev/null
  export SLUICE_SASL_SSL_BOOTSTRAP=127.0.0.1:$SASL_SSL_PORT SLUICE_SASL_PLAINTEXT_BOOTSTRAP=127.0.0.1:$SASL_PLAINTEXT_PORT
  export SLUICE_CA_PEM=$WORK/tls/ca.pem SLUICE_SASL_PLAIN_USER=alice SLUICE_SASL_PLAIN_PASSWORD=alice-secret
  export SLUICE_OAUTH_BOOTSTRAP=127.0.0.1:$OAUTH_PORT SLUICE_OAUTH_TOKEN_URL=http://127.0.0.1:$OAUTH_SERVER_PORT/token
  export SLUICE_OAUTH_CLIENT_ID=sluice-client SLUICE_OAUTH_CLIENT_SECRET=sluice-client-secret SLUICE_OAUTH_REAUTH_MS=5000
  "$WORK/harness" oauth-server -addr "127.0.0.1:$OAUTH_SERVER_PORT" -client-id "$SLUICE_OAUTH_CLIENT_ID" \
    -client-secret "$SLUICE_OAUTH_CLIENT_SECRET" -audience sluice >"$WORK/oauth.log" 2>&1 &
  OAUTH_PID=$!
  deadline=$(( $(date +%s) + 10 ))
  until grep -qs '^ready' "$WORK/oauth.log"; do
    if ! kill -0 "$OAUTH_PID" 2>/dev/null || [ "$(date +%s)" -ge "$deadline" ]; then
      echo "the harness's OAuth provider did not start:"; cat "$WORK/oauth.log"; echo "0 passed, 1 failed"; exit 1
    fi
    sleep 0.1
  done
  cat >"$WORK/server.properties" <<PROPS
listeners=PLAINTEXT://$BOOTSTRAP,SASL_SSL://$SLUICE_SASL_SSL_BOOTSTRAP,SASL_PLAINTEXT://$SLUICE_SASL_PLAINTEXT_BOOTSTRAP,OAUTH://$SLUICE_OAUTH_BOOTSTRAP
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,OAUTH:SASL_PLAINTEXT
ssl.keystore.type=PEM
ssl.keystore.location=$WORK/tls/broker.pem
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
    username="admin" password="admin-secret" \\
    user_admin="admin-secret" \\
    user_alice="alice-secret";
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler
listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
listener.name.oauth.sasl.oauthbearer.jwks.endpoint.url=http://127.0.0.1:$OAUTH_SERVER_PORT/jwks
listener.name.oauth.sasl.oauthbearer.expected.audience=sluice
listener.name.oauth.sasl.oauthbearer.expected.issuer=http://127.0.0.1:$OAUTH_SERVER_PORT
listener.name.oauth.connections.max.reauth.ms=$SLUICE_OAUTH_REAUTH_MS
# The streams scenario that kills an instance sets its group's streams.session.timeout.ms to 10 s.
group.streams.min.session.timeout.ms=5000
group.streams.min.heartbeat.interval.ms=500
PROPS
  "$WORK/sluice" --config "$WORK/server.properties" --data-dir "$WORK/data" >"$WORK/sluice.log" 2>&1 &
  BROKER_PID=$!
  # A second broker with the authorizer on, for the security.acls scenarios of confluent-kafka, Java
  # Admin and kafkajs (SLUICE_ACL_*): SASL_PLAINTEXT, PLAIN users admin (super user) and, with no ACLs,
  # alice-<client> (SLUICE_ACL_USER-python, -java, -kafkajs: one each, so that one scenario's ACLs never
  # help another's), all with SLUICE_ACL_PASSWORD; its log (SLUICE_ACL_LOG) holds the audit lines.
  if wanted python || wanted java || wanted kafkajs; then
    ACL_PORT=$("$WORK/harness" freeport -n 1)
    export SLUICE_ACL_BOOTSTRAP=127.0.0.1:$ACL_PORT SLUICE_ACL_ADMIN_USER=admin SLUICE_ACL_ADMIN_PASSWORD=admin-secret
    export SLUICE_ACL_USER=alice SLUICE_ACL_PASSWORD=alice-secret SLUICE_ACL_LOG=$WORK/acl-sluice.log
    cat >"$WORK/acl-server.properties" <<PROPS
listeners=SASL_PLAINTEXT://$SLUICE_ACL_BOOTSTRAP
sasl.enabled.mechanisms=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
    username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" \\
    user_alice-python="alice-secret" user_alice-java="alice-secret" user_alice-kafkajs="alice-secret";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
offsets.topic.num.partitions=1
PROPS
    "$WORK/sluice" --config "$WORK/acl-server.properties" --data-dir "$WORK/acl-data" --metrics-listen "" \
      >"$WORK/acl-sluice.log" 2>&1 &
    ACL_BROKER_PID=$!
  fi
  # kafka-dump-log reads the broker's segment files.
  export SLUICE_CLIENTS_DATA_DIR=$WORK/data
fi
APIS=""
deadline=$(( $(date +%s) + 30 ))
until APIS=$("$WORK/harness" apis -bootstrap "$BOOTSTRAP" -timeout 2s 2>/dev/null); do
  if [ -n "$BROKER_PID" ] && ! kill -0 "$BROKER_PID" 2>/dev/null; then
    echo "broker exited at start:"; tail -n 20 "$WORK/sluice.log"; echo "0 passed, 1 failed"; exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "broker at $BOOTSTRAP did not answer ApiVersions within 30s"; echo "0 passed, 1 failed"; exit 1
  fi
  sleep 0.2
done
echo "broker $BROKER_VERSION at $BOOTSTRAP advertises: $APIS"
if [ -n "$ACL_BROKER_PID" ]; then
  deadline=$(( $(date +%s) + 30 ))
  until "$WORK/harness" apis -bootstrap "$SLUICE_ACL_BOOTSTRAP" -timeout 2s >/dev/null 2>&1; do
    if ! kill -0 "$ACL_BROKER_PID" 2>/dev/null || [ "$(date +%s)" -ge "$deadline" ]; then
      group_failure broker "the broker with the authorizer (security.acls) did not start: $(tail -n 5 "$WORK/acl-sluice.log" | tr '\n' ' ')"
      unset SLUICE_ACL_BOOTSTRAP; break
    fi
    sleep 0.2
  done
fi
echo "SASL_SSL: ${SLUICE_SASL_SSL_BOOTSTRAP:-(not set)}, SASL_PLAINTEXT: ${SLUICE_SASL_PLAINTEXT_BOOTSTRAP:-(not set)}, CA: ${SLUICE_CA_PEM:-(not set)}, OAUTH: ${SLUICE_OAUTH_BOOTSTRAP:-(not set)}"
"$WORK/harness" api-versions -bootstrap "$BOOTSTRAP" -timeout 10s -out "$WORK/api-versions.json" ||
  echo '[]' >"$WORK/api-versions.json"

export SLUICE_BOOTSTRAP=$BOOTSTRAP SLUICE_APIS=$APIS SLUICE_RESULTS_DIR=$RESULTS_DIR SLUICE_BIN=$WORK/sluice
export SLUICE_RUN_ID=${SLUICE_RUN_ID:-$(date +%s | tail -c 6)$$}
export SLUICE_HARNESS=$WORK/harness SLUICE_CLIENTS_VENV=$VENV SLUICE_CLIENTS_JAVA_CP=$JAVA_CP
export SLUICE_EXAMPLE_GO=$WORK/example-go
# The security scenarios (test/clients/*: security-*) skip themselves when a listener's variable is unset.
export SLUICE_SASL_PLAIN_USER=${SLUICE_SASL_PLAIN_USER:-alice} SLUICE_SASL_PLAIN_PASSWORD=${SLUICE_SASL_PLAIN_PASSWORD:-alice-secret}

# Client ids a group's runner reports under besides the group's own name (test/clients/python/suite.py
# also drives kafka-python and aiokafka).
declare -A GROUP_CLIENTS=([python]="python kafka-python aiokafka")

# run_group CLIENT COMMAND...: run one client's scenarios with a time limit. A runner that exits
# non-zero without reporting a failure (a crash, a timeout) is recorded as a failure.
run_group() {
  local client=$1 rc t files=()
  shift
  section "$client"
  if [ -n "${SETUP_ERR[$client]:-}" ]; then group_failure "$client" "${SETUP_ERR[$client]}"; return; fi
  for c in ${GROUP_CLIENTS[$client]:-$client}; do files+=("$RESULTS_DIR/$c.jsonl"); done
  t=$(date +%s)
  set +e
  timeout --kill-after=10 "$GROUP_TIMEOUT" "$@"
  rc=$?
  set -e
  if [ $rc -ne 0 ] && ! grep -qs '"status":"fail"' "${files[@]}"; then
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      group_failure "$client" "runner timed out after ${GROUP_TIMEOUT}s"
    else
      group_failure "$client" "runner exited with code $rc without reporting a failure (see its output)"
    fi
  fi
  echo "$client done in $(elapsed "$t")"
  if [ -n "$BROKER_PID" ] && ! kill -0 "$BROKER_PID" 2>/dev/null; then
    group_failure broker "the broker exited while $client ran; its last log lines: $(tail -n 5 "$WORK/sluice.log" | tr '\n' ' ')"
    return 1
  fi
}

broker_up=1
if wanted kcat && [ $broker_up = 1 ]; then run_group kcat bash "$CLIENTS/kcat/run.sh" || broker_up=0; fi
if wanted python && [ $broker_up = 1 ]; then run_group python "$VENV/bin/python" "$CLIENTS/python/suite.py" || broker_up=0; fi
if wanted java && [ $broker_up = 1 ]; then run_group java java -cp "$JAVA_CP" sluice.clients.Main || broker_up=0; fi
# The tools, Streams and Connect JVMs run briefly and mostly wait: the C1 compiler and the serial
# collector keep their CPU use low on a small machine.
JVM_LIGHT=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
if wanted java39 && [ $broker_up = 1 ]; then
  run_group java39 java "${JVM_LIGHT[@]}" -cp "$JAVA39_CP" sluice.clients.kafka39.Main || broker_up=0
fi
if wanted kafkajs && [ $broker_up = 1 ]; then run_group kafkajs node "$CLIENTS/kafkajs/suite.js" || broker_up=0; fi
if wanted kafka-tools && [ $broker_up = 1 ]; then
  run_group kafka-tools java "${JVM_LIGHT[@]}" -cp "$APPS_CP" sluice.clients.tools.Main || broker_up=0
fi
if wanted kafka-streams && [ $broker_up = 1 ]; then
  run_group kafka-streams java "${JVM_LIGHT[@]}" -cp "$APPS_CP" sluice.clients.streams.Main || broker_up=0
fi
if wanted kafka-connect && [ $broker_up = 1 ]; then
  run_group kafka-connect java "${JVM_LIGHT[@]}" -cp "$CONNECT_CP" sluice.clients.connect.Main || broker_up=0
fi
if wanted examples && [ $broker_up = 1 ]; then run_group examples bash "$CLIENTS/examples/run.sh" || broker_up=0; fi

section "results"
if [ $broker_up = 0 ] || grep -qs '"status":"fail"' "$RESULTS_DIR"/*.jsonl; then
  [ -f "$WORK/sluice.log" ] && { echo "broker log (last 30 lines):"; tail -n 30 "$WORK/sluice.log"; echo; }
fi
set +e
summary=$("$WORK/harness" collect -out "$CLIENTS/results.json" -broker-version "$BROKER_VERSION" -apis "$APIS" \
  -api-versions "$WORK/api-versions.json" $strict "$RESULTS_DIR")
rc=$?
set -e
# A full run with --write-docs regenerates the compatibility page (commit it from a green run).
if [ -n "$write_docs" ] && [ "$only" = "$all_groups" ] && [ $rc -ne 2 ]; then
  if "$WORK/harness" compat -in "$CLIENTS/results.json" -out "$ROOT/docs/compatibility.md" -root "$ROOT"; then
    echo "wrote docs/compatibility.md"
  else
    echo "could not write docs/compatibility.md"
  fi
fi
# The summary ends with the closing line "N passed, N failed[, N skipped]": it must stay last.
[ -n "$summary" ] && echo "$summary"
if [ $rc -eq 2 ]; then echo "0 passed, 1 failed"; exit 1; fi
exit $rc

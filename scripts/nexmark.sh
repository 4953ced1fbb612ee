#!/usr/bin/env bash
# Nexmark for the benchmarks: the generator, its events, and where the Flink queries come from.
#
#   scripts/nexmark.sh install                    the `nexmark` crate's binary (crates.io, with its
#                                                 `bin` feature) into .services/nexmark/bin (once)
#   scripts/nexmark.sh generate N DIR [FILES]     N events as JSON lines in Flink's Nexmark schema:
#                                                 DIR/events/part-*.json (FILES files, default 2)
#                                                 and DIR/side_input.csv (q13's side table)
#   scripts/nexmark.sh queries [--from DIR]       print the directory the Flink queries are read
#                                                 from; --from copies q*.sql and ddl_*.sql there
#   scripts/nexmark.sh udf [--from DIR]           print the jar of q14's function (CountChar);
#                                                 --from builds it from DIR, nexmark-flink's
#                                                 src/main/java, against jars/flink/ (javac)
#
# The queries (q0-q22 and their DDL) are nexmark/nexmark's Flink queries
# (nexmark-flink/src/main/resources/queries/). No package registry ships them, so they are not
# installed from one and not kept in this repository: benchmarks/nexmark.py reads them from
# $NEXMARK_QUERIES (default .services/nexmark-queries/, gitignored). Put them there with
# `scripts/nexmark.sh queries --from <checkout>/nexmark-flink/src/main/resources/queries`.
# q14 calls a user-defined function of the same repository (com.github.nexmark.flink.udf.
# CountChar), which no registry ships either: `udf --from <checkout>/nexmark-flink/src/main/java`
# compiles it into .services/nexmark/nexmark-udf.jar, which both engines load.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.services/nexmark"
BIN="$DIR/bin/nexmark"
VERSION="${NEXMARK_VERSION:-0.2.0}"
QUERIES="${NEXMARK_QUERIES:-$ROOT/.services/nexmark-queries}"
log() { echo "nexmark.sh: $*" >&2; }

install() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock 9
  if [[ -x "$BIN" ]]; then
    return 0
  fi
  command -v cargo >/dev/null || { log "cargo not found (the Rust toolchain builds the generator)"; exit 1; }
  log "installing nexmark $VERSION from crates.io into $DIR (a minute or two, once) ..."
  cargo install nexmark --version "$VERSION" --features bin --locked --root "$DIR" >&2
}

generate() {
  local n="${1:?number of events}" out="${2:?output directory}" files="${3:-2}"
  install
  mkdir -p "$out"
  # --no-wait: all events at once (the generator's event times still advance as at its rate)
  "$BIN" --number "$n" --no-wait \
    | "$ROOT/.venv/bin/python" "$ROOT/benchmarks/nexmark.py" convert --out "$out" --files "$files"
}

queries() {
  if [[ "${1:-}" == "--from" ]]; then
    local src="${2:?a directory with q0.sql ... and ddl_gen.sql}"
    [[ -f "$src/q0.sql" && -f "$src/ddl_gen.sql" ]] || { log "no q0.sql / ddl_gen.sql in $src"; exit 1; }
    mkdir -p "$QUERIES"
    cp "$src"/q*.sql "$src"/ddl_*.sql "$QUERIES"/
    log "copied $(ls "$QUERIES"/q*.sql | wc -l) queries into $QUERIES"
  fi
  [[ -f "$QUERIES/q0.sql" ]] || { log "no queries in $QUERIES (see: scripts/nexmark.sh queries --from DIR)"; exit 3; }
  echo "$QUERIES"
}

udf() {
  local jar="$DIR/nexmark-udf.jar"
  if [[ "${1:-}" == "--from" ]]; then
    local src="${2:?nexmark-flink/src/main/java of a nexmark checkout}"
    local pkg="$src/com/github/nexmark/flink/udf"
    [[ -d "$pkg" ]] || { log "no com/github/nexmark/flink/udf in $src"; exit 1; }
    "$ROOT/scripts/jars.sh" flink --quiet
    local tmp; tmp="$(mktemp -d)"
    javac -d "$tmp/classes" -cp "$ROOT/jars/flink/*" "$pkg"/*.java
    mkdir -p "$DIR"
    jar cf "$jar" -C "$tmp/classes" .
    rm -rf "$tmp"
    log "built $jar"
  fi
  [[ -f "$jar" ]] || { log "no $jar (see: scripts/nexmark.sh udf --from DIR)"; exit 3; }
  echo "$jar"
}

case "${1:-}" in
  install) install; echo "$BIN" ;;
  generate) shift; generate "$@" ;;
  queries) shift; queries "$@" ;;
  udf) shift; udf "$@" ;;
  *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
esac

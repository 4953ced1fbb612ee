# Sourced by kafka.sh, postgres.sh and mariadb.sh: what their command lines share.
#
#   <script> COMMAND [--port P] [--name N] [--timeout S] [the script's own options] [-- ARGS...]
#
# parse_service_args sets CMD, NAME (default "default"), PORT (empty when not given),
# TIMEOUT (the caller's value when not given) and EXTRA (the arguments after --). A
# script with options of its own defines own_option: called with the remaining arguments
# when the first is not a common one, it sets OWN_TOOK to how many it took and returns 0,
# or returns 1 if the option is not its either.
SERVICE="$(basename "$0")"

# The header comment of the calling script, from its second line to the first line that
# is not a comment.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
log() { echo "$SERVICE[$NAME]: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

parse_service_args() {
  CMD="${1:-}"; [[ -n "$CMD" ]] || usage; shift
  NAME=default PORT="" EXTRA=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --port|--name|--timeout) [[ $# -ge 2 ]] || usage; _service_arg "$1" "$2"; shift 2 ;;
      --port=*|--name=*|--timeout=*) _service_arg "${1%%=*}" "${1#*=}"; shift ;;
      --) shift; EXTRA=("$@"); break ;;
      -h|--help) usage ;;
      *)
        OWN_TOOK=0
        if declare -F own_option >/dev/null && own_option "$@"; then
          shift "$OWN_TOOK"
        else
          echo "$SERVICE: unknown argument: $1" >&2; usage
        fi ;;
    esac
  done
  [[ "$NAME" =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad --name '$NAME' (letters, digits, _ . - only)"
}

_service_arg() {
  case "$1" in
    --port) PORT="$2" ;;
    --name) NAME="$2" ;;
    --timeout) TIMEOUT="$2" ;;
  esac
}

# The directory of server NAME's files: .services/<service>-NAME/ in the checkout. As root the
# server runs as its system user ($1: postgres, mysql), which must be able to reach its files:
# a checkout under a private directory (/root/…) keeps them under /var/tmp instead.
service_dir() {
  local user="$1" service="$2"
  if [[ "$(id -u)" == 0 ]] && id "$user" >/dev/null 2>&1 \
     && ! runuser -u "$user" -- test -x "$ROOT" 2>/dev/null; then
    echo "/var/tmp/streamsql-$service-$(printf '%s' "$ROOT" | md5sum | cut -c1-8)-$NAME"
  else
    echo "$ROOT/.services/$service-$NAME"
  fi
}

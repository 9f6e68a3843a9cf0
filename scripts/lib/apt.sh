# shellcheck shell=bash
# apt helpers of scripts/bootstrap, which sources this file
# (tests/tooling/test_bootstrap_apt.py runs them against stand-in apt commands).
# No command's output is piped into grep -q: under pipefail, grep -q leaves at
# its first match, the writer dies of SIGPIPE (status 141), and the match reads
# as a failure. Each output is captured first and matched in the shell.

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi

# lockstep_apt_installed package: whether dpkg has it installed.
lockstep_apt_installed() {
  local status
  status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [[ $status == *" ok installed" ]]
}

# lockstep_apt_install [--no-install-recommends] package...: those missing.
lockstep_apt_install() {
  local missing=() p opts=()
  if [ "${1:-}" = --no-install-recommends ]; then opts=("$1"); shift; fi
  for p in "$@"; do
    lockstep_apt_installed "$p" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq ${opts[@]+"${opts[@]}"} "${missing[@]}" >/dev/null
}

# lockstep_apt_candidate package: prints the version apt would install, or
# fails when apt has none ("Candidate: (none)", or no such package).
lockstep_apt_candidate() {
  local policy line
  policy=$(apt-cache policy "$1" 2>/dev/null) || return 1
  while read -r line; do
    case $line in
      "Candidate: (none)") return 1 ;;
      "Candidate: "*) printf '%s\n' "${line#Candidate: }"; return 0 ;;
    esac
  done <<<"$policy"
  return 1
}

# lockstep_chromium: Debian's Chromium, headless, for the browser tests of
# the HTML report (tests/tooling/lockstep_browser.py), without the desktop
# packages it recommends; DejaVu draws the report's text and symbols. Ubuntu
# ships Chromium as a snap only: there the browser tests are skipped, and
# scripts/test's summary line counts them with the reason.
lockstep_chromium() {
  local candidate
  if lockstep_apt_installed chromium; then
    lockstep_apt_install --no-install-recommends fonts-dejavu-core
  elif candidate=$(lockstep_apt_candidate chromium) ||
     { "${SUDO[@]}" apt-get update -qq && candidate=$(lockstep_apt_candidate chromium); }; then
    log "installing Debian's chromium $candidate (headless) for the browser tests of the HTML report"
    lockstep_apt_install --no-install-recommends chromium fonts-dejavu-core
  elif command -v chromium >/dev/null 2>&1; then
    log "apt has no chromium package here: the browser tests use $(command -v chromium)"
  else
    log "apt has no chromium package here (Ubuntu ships Chromium as a snap only): the browser tests of the HTML report are skipped"
  fi
}

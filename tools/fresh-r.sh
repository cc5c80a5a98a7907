#!/usr/bin/env bash
# A user's first steps on a fresh R: the two commands of README.md's quick
# start, run in a fresh clone of this repository (its committed HEAD) by a
# user who is not root, whose user library (R_LIBS_USER) does not exist yet,
# and who sees only R's base and recommended packages (the system's site
# libraries are hidden), so that every dependency comes from CRAN in its
# current version. Prints each command's last lines and exit status.
#
# Run as root, it creates a throwaway user (useradd -m) and removes it
# afterwards (FRESH_R_KEEP=1 keeps it and its home); run as another user, it
# runs the commands as that user with a throwaway HOME.
#
# Usage: bash tools/fresh-r.sh    (about half an hour on 2 cores: the
# dependencies, testthat's among them, are compiled from source)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lines="${FRESH_R_LINES:-25}"

# The README's two commands: the first two ```sh blocks of its quick start.
mapfile -t cmds < <(awk '
  /^## Quick start/ { in_qs = 1; next }
  in_qs && /^## / { exit }
  in_qs && /^```sh/ { block = 1; cmd = ""; next }
  in_qs && block && /^```/ { block = 0; print cmd; next }
  in_qs && block { cmd = (cmd == "" ? $0 : cmd " " $0) }
' "$root/README.md" | head -n 2)
if [ "${#cmds[@]}" -ne 2 ]; then
  echo "could not find the two commands of README.md's quick start" >&2
  exit 2
fi

if [ "$(id -u)" = "0" ]; then
  user="bnmf-fresh-$$"
  useradd -m -s /bin/bash "$user"
  home="$(getent passwd "$user" | cut -d: -f6)"
  cleanup() { [ "${FRESH_R_KEEP:-0}" = "1" ] || userdel -r "$user" >/dev/null 2>&1 || true; }
  as_user() { runuser -u "$user" -- "$@"; }
else
  user="$(id -un)"
  home="$(mktemp -d)"
  cleanup() { [ "${FRESH_R_KEEP:-0}" = "1" ] || rm -rf "$home"; }
  as_user() { "$@"; }
fi
trap cleanup EXIT

# cloned by the caller (git refuses to read a repository another user owns)
clone="$home/bnmf"
git clone -q --no-local "$root" "$clone"
[ "$(id -u)" != "0" ] || chown -R "$user:" "$clone"
echo "== user $user (uid $(id -u "$user")), clone of $(git -C "$root" rev-parse --short HEAD) in $clone"

# A clean environment: the user's own HOME, no R_LIBS, no site libraries
# (R_LIBS_SITE names a folder that does not exist), R_LIBS_USER as R sets it
# (a folder under HOME that does not exist yet).
fresh_env=(env -i HOME="$home" USER="$user" LOGNAME="$user" PATH=/usr/local/bin:/usr/bin:/bin
           LANG="${LANG:-C.UTF-8}" R_LIBS_SITE="$home/no-site-library")
for v in http_proxy https_proxy HTTP_PROXY HTTPS_PROXY no_proxy NO_PROXY; do
  [ -n "${!v:-}" ] && fresh_env+=("$v=${!v}")
done
as_user "${fresh_env[@]}" Rscript -e 'cat("R", format(getRversion()), "library path:", .libPaths(), "\n")'

status=0
for i in 0 1; do
  log="$home/command-$((i + 1)).log"
  echo
  echo "== command $((i + 1)): ${cmds[$i]}"
  set +e
  as_user "${fresh_env[@]}" bash -c "cd \"$clone\" && ${cmds[$i]}" >"$log" 2>&1
  rc=$?
  set -e
  tail -n "$lines" "$log"
  echo "== command $((i + 1)) exit status: $rc"
  [ "$rc" -eq 0 ] || status=1
done
echo
echo "== installed in the user library:"
as_user "${fresh_env[@]}" Rscript -e 'ip <- installed.packages(lib.loc = .libPaths()[1]); cat(.libPaths()[1], ":", nrow(ip), "packages;", paste(intersect(c("bnmf", "testthat", "future", "future.apply", "rmarkdown", "knitr", "posterior", "coda", "NMF"), rownames(ip)), ip[intersect(c("bnmf", "testthat", "future", "future.apply", "rmarkdown", "knitr", "posterior", "coda", "NMF"), rownames(ip)), "Version"], collapse = ", "), "\n")' || true
exit "$status"

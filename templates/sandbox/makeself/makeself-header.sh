#!/bin/sh
# Self-extracting archive (cannbuild sandbox stand-in for makeself 2.5.0-patch1).
# Options read here: --help, --info, --list, --check, --noexec, --keep,
# --target DIR, --quiet; everything else is passed to the install script.
ARCHIVE_LINE=@ARCHIVE_LINE@
SHA256=@SHA256@
LABEL="@LABEL@"
DATE="@DATE@"
SCRIPT="@SCRIPT@"
SCRIPT_ARGS="@SCRIPT_ARGS@"
quiet=n
noexec=n
keep=n
target=""
action=run
for arg in "$@"; do
    case "$arg" in
        --quiet|-q) quiet=y ;;
    esac
done
while [ $# -gt 0 ]; do
    case "$1" in
        --help|-h) action=help; shift ;;
        --info) action=info; shift ;;
        --list) action=list; shift ;;
        --check) action=check; shift ;;
        --noexec) noexec=y; shift ;;
        --keep) keep=y; shift ;;
        --target) target="$2"; keep=y; shift 2 ;;
        *) break ;;
    esac
done
payload() { tail -n +"$ARCHIVE_LINE" "$0"; }
verify() {
    [ "$quiet" = y ] || printf "Verifying archive integrity... "
    actual=$(payload | sha256sum | cut -d' ' -f1)
    if [ "$actual" != "$SHA256" ]; then
        echo "Error in SHA256 checksums: $actual is different from $SHA256" >&2
        exit 2
    fi
    [ "$quiet" = y ] || echo "All good."
}
case "$action" in
    help)
        echo "Makeself-style archive: $LABEL"
        echo "  $0 [--quiet] [--noexec] [--target DIR] [--list] [--check] [-- install options]"
        if payload | tar tzf - ./help.info >/dev/null 2>&1; then payload | tar xzf - -O ./help.info; fi
        exit 0 ;;
    info) echo "Identification: $LABEL"; echo "Date of packaging: $DATE"; echo "Script: $SCRIPT $SCRIPT_ARGS"; exit 0 ;;
    list) payload | tar tzf -; exit 0 ;;
    check) verify; exit 0 ;;
esac
verify
if [ -n "$target" ]; then
    tmpdir="$target"
    mkdir -p "$tmpdir"
else
    tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/selfgz.XXXXXX") || exit 1
fi
[ "$quiet" = y ] || echo "Uncompressing $LABEL"
payload | tar xzf - -C "$tmpdir" || { echo "Extraction failed" >&2; exit 1; }
rc=0
if [ "$noexec" = n ]; then
    here=$(pwd)
    (cd "$tmpdir" && exec bash $SCRIPT $SCRIPT_ARGS "$@") || rc=$?
    cd "$here"
fi
[ "$keep" = y ] || rm -rf "$tmpdir"
exit $rc

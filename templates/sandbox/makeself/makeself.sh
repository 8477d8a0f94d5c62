#!/bin/bash
# cannbuild sandbox stand-in for makeself (release-2.5.0-patch1 as CANN pins it).
# Same command line as makeself for what the CANN builds use:
#   makeself.sh [--quiet] [--help-header FILE] [--packaging-date DATE] [--tar-extra OPTS]
#               <content_dir> <file_name> <label> <startup_script> [args...]
# The archive is a shell header followed by a tar.gz payload whose sha256 the
# header checks before extracting.  It packs as the real makeself 2.5.0 does: the
# header carries the packaging date (`date`, or --packaging-date), the files are
# tarred in sorted order with their own times, and the tar is gzipped from a file,
# whose time goes into the gzip header.  Where SOURCE_DATE_EPOCH is set
# (reproducible-builds.org) the stand-in takes that time for all three, so the same
# inputs give the same bytes; the real makeself 2.5.0 does not read it.
set -e
QUIET=n
HELP_HEADER=""
DATE=""
TAR_EXTRA=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quiet|-q) QUIET=y; shift ;;
        --help-header) HELP_HEADER="$2"; shift 2 ;;
        --packaging-date) DATE="$2"; shift 2 ;;
        --tar-extra) TAR_EXTRA="$2"; shift 2 ;;
        --complevel|--tar-format|--header|--cleanup|--compress|--target|--lsm|--license) shift 2 ;;
        --gzip|--nox11|--nomd5|--nocrc|--sha256) shift ;;
        --*) shift ;;
        *) break ;;
    esac
done
if [ $# -lt 4 ]; then
    echo "Usage: $0 [options] content_dir file_name label startup_script [script_args]" >&2
    exit 1
fi
CONTENT_DIR="$1"
ARCHIVE="$2"
LABEL="$3"
SCRIPT="$4"
shift 4
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ -n "$HELP_HEADER" ] && [ -f "$HELP_HEADER" ] && [ ! -f "$CONTENT_DIR/help.info" ]; then
    cp "$HELP_HEADER" "$CONTENT_DIR/help.info"
fi
TIME_ARGS=()
if [ -n "${SOURCE_DATE_EPOCH}" ]; then
    [ -n "$DATE" ] || DATE="$(LC_ALL=C TZ=UTC date -d "@${SOURCE_DATE_EPOCH}")"
    TIME_ARGS=(--mtime="@${SOURCE_DATE_EPOCH}" --clamp-mtime)
fi
[ -n "$DATE" ] || DATE="$(LC_ALL=C date)"
TARFILE="$(mktemp "${TMPDIR:-/tmp}/makeself-tar.XXXXXX")"
PAYLOAD="$(mktemp "${TMPDIR:-/tmp}/makeself-payload.XXXXXX")"
trap 'rm -f "$TARFILE" "$PAYLOAD"' EXIT
# shellcheck disable=SC2086
tar --sort=name --owner=0 --group=0 --numeric-owner "${TIME_ARGS[@]}" $TAR_EXTRA \
    -C "$CONTENT_DIR" -cf "$TARFILE" .
if [ -n "${SOURCE_DATE_EPOCH}" ]; then
    touch -d "@${SOURCE_DATE_EPOCH}" "$TARFILE"
fi
gzip -c9 < "$TARFILE" > "$PAYLOAD"
SUM="$(sha256sum "$PAYLOAD" | cut -d' ' -f1)"
HEADER_LINES=$(($(wc -l < "$HERE/makeself-header.sh") + 1))
{
    sed -e "s|@ARCHIVE_LINE@|$((HEADER_LINES + 1))|" \
        -e "s|@SHA256@|$SUM|" \
        -e "s|@LABEL@|$LABEL|" \
        -e "s|@DATE@|$DATE|" \
        -e "s|@SCRIPT@|$SCRIPT|" \
        -e "s|@SCRIPT_ARGS@|$*|" "$HERE/makeself-header.sh"
    echo "# payload follows"
} > "$ARCHIVE"
cat "$PAYLOAD" >> "$ARCHIVE"
chmod +x "$ARCHIVE"
if [ "$QUIET" = n ]; then
    echo "Header is ${HEADER_LINES} lines long"
fi
echo "Self-extractable archive \"$(basename "$ARCHIVE")\" successfully created."

#!/bin/bash
# cannbuild sandbox stand-in for makeself (release-2.5.0-patch1 as CANN pins it).
# Same command line as makeself for what the CANN builds use:
#   makeself.sh [--quiet] [--help-header FILE] <content_dir> <file_name> <label> <startup_script> [args...]
# The archive is a shell header followed by a tar.gz payload whose sha256 the
# header checks before extracting.
set -e
QUIET=n
HELP_HEADER=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quiet|-q) QUIET=y; shift ;;
        --help-header) HELP_HEADER="$2"; shift 2 ;;
        --gzip|--nox11|--nomd5|--nocrc|--sha256|--complevel) shift ;;
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
PAYLOAD="$(mktemp "${TMPDIR:-/tmp}/makeself-payload.XXXXXX")"
trap 'rm -f "$PAYLOAD"' EXIT
# Reproducible payload: sorted names, fixed owner and times.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' -C "$CONTENT_DIR" -cf - . | gzip -n -9 > "$PAYLOAD"
SUM="$(sha256sum "$PAYLOAD" | cut -d' ' -f1)"
HEADER_LINES=$(($(wc -l < "$HERE/makeself-header.sh") + 1))
{
    sed -e "s|@ARCHIVE_LINE@|$((HEADER_LINES + 1))|" \
        -e "s|@SHA256@|$SUM|" \
        -e "s|@LABEL@|$LABEL|" \
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

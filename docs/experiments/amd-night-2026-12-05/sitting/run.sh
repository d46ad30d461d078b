#!/bin/sh
# The evening's sitting script, unchanged, run from this folder (it writes its outputs here):
#   BIN=/tmp/bin/booblik-load-d04d962 sh run.sh
set -eu
BIN=${BIN:-../../../../target/release/booblik-load} exec sh ../../amd-evening-2026-12-05/run.sh

#!/usr/bin/env bash
# Builds the booblik container image on a machine with no registry.
#
# Why this way: the Docker engine here has no images and cannot pull any, so the image is
# `FROM scratch` and holds nothing but our own binaries. They must therefore be statically
# linked. There is no musl target, so we link glibc statically (`+crt-static`). The explicit
# `--target` keeps build scripts and proc-macros (which run on the host) dynamic.
#
# What it does, every step idempotent:
#   1. cargo builds every workspace binary, static, in release (incremental on reruns);
#   2. checks each binary really is static (no ELF interpreter), strips its debug info;
#   3. stages a tiny root filesystem (binaries at /, /etc/passwd with a non-root user,
#      /tmp, and /data and /offsets owned by that user) as the docker build context, with the
#      installed nats-server and the two libraries it needs, for the compose `cluster` profile;
#   4. `docker build` with the repository's Dockerfile; then smoke-runs the image.
#
# Environment (all optional):
#   BOOBLIK_IMAGE               image tag to build                  (default booblik:dev)
#   BOOBLIK_STATIC_TARGET_DIR   cargo target dir for this build     (default $CARGO_TARGET_DIR,
#                               else <repo>/target; the static artifacts land under
#                               <dir>/x86_64-unknown-linux-gnu/release, apart from normal builds)
#   NATS_SERVER                 the nats-server to stage            (default /usr/sbin/nats-server)
#   BOOBLIK_SKIP_CARGO=1        reuse the binaries already built (just restage and rebuild the image)
#   CARGO_PROFILE_RELEASE_LTO   default false here (rustc's local thin LTO), not the workspace
#                               profile's cross-crate "thin": linking twelve binaries with
#                               cross-crate LTO dominated the build time, and the image is a demo
#                               and a test subject, not where benchmark numbers come from
#   CARGO_PROFILE_RELEASE_DEBUG default false here: the image strips debug info anyway
#   BOOBLIK_CARGO_PACKAGES      cargo package selection             (default --workspace; e.g.
#                               "-p booblik-broker -p booblik-client" for a partial image)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
image=${BOOBLIK_IMAGE:-booblik:dev}
target_dir=${BOOBLIK_STATIC_TARGET_DIR:-${CARGO_TARGET_DIR:-$repo/target}}
triple=x86_64-unknown-linux-gnu
context_dir=$target_dir/docker-context
# The unprivileged user the containers run as (no name service in scratch: numbers only).
user_id=10001

log() { printf '[build-image] %s\n' "$*" >&2; }

cd "$repo"
binaries_file=$target_dir/docker-binaries.txt
mkdir -p "$target_dir"

if [ "${BOOBLIK_SKIP_CARGO:-0}" != 1 ]; then
  log "cargo build --release --target $triple (static glibc) into $target_dir"
  started=$SECONDS
  # Cargo prints one JSON message per artifact; keep the paths of the binaries it produced, so a
  # stale binary from an older build never sneaks into the image.
  # shellcheck disable=SC2086 # the package selection is meant to split into words
  RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    CARGO_TARGET_DIR="$target_dir" \
    CARGO_PROFILE_RELEASE_LTO="${CARGO_PROFILE_RELEASE_LTO:-false}" \
    CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-false}" \
    cargo build --release --locked ${BOOBLIK_CARGO_PACKAGES:---workspace} --bins --target "$triple" \
    --message-format=json-render-diagnostics \
    | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and "bin" in msg["target"]["kind"] and msg.get("executable"):
        print(msg["executable"])
' >"$binaries_file.new"
  mv "$binaries_file.new" "$binaries_file"
  log "cargo done in $((SECONDS - started)) s"
fi

[ -s "$binaries_file" ] || { log "no binaries recorded in $binaries_file: run without BOOBLIK_SKIP_CARGO"; exit 1; }

log "staging the build context in $context_dir"
rm -rf "$context_dir"
mkdir -p "$context_dir/rootfs/etc" "$context_dir/rootfs/tmp" \
  "$context_dir/state/data" "$context_dir/state/offsets"
chmod 1777 "$context_dir/rootfs/tmp"
chmod 0755 "$context_dir/state/data" "$context_dir/state/offsets"
while read -r binary; do
  name=$(basename "$binary")
  if readelf -l "$binary" | grep -q 'Requesting program interpreter'; then
    log "$name is dynamically linked: the scratch image cannot run it"
    exit 1
  fi
  # Drop the DWARF line tables the release profile keeps for profilers (about 4/5 of each file);
  # the symbol table stays, so a panic's backtrace still names functions.
  objcopy --strip-debug "$binary" "$context_dir/rootfs/$name"
  chmod 0755 "$context_dir/rootfs/$name"
done <"$binaries_file"
# nats-server, for the compose `cluster` profile. Debian's build is dynamically linked, but only
# to libc and the loader (ldd); the two files are staged at the paths the binary and the loader
# look them up (/lib64/ld-linux-x86-64.so.2, the ELF interpreter; /lib/x86_64-linux-gnu/libc.so.6,
# in the loader's built-in search path, as there is no /etc/ld.so.cache), the real files, not the
# host's symlinks. Anything else it links would be missing in the image: refused here.
nats_server=${NATS_SERVER:-/usr/sbin/nats-server}
if [ -x "$nats_server" ]; then
  libs=$(ldd "$nats_server" | awk '$2 == "=>" { print $3; next } $1 ~ /^\// { print $1 }')
  for lib in $libs; do
    case $(basename "$lib") in
      libc.so.6 | ld-linux-x86-64.so.2) ;;
      *) log "$nats_server links $lib: only libc and the loader are staged"; exit 1 ;;
    esac
    mkdir -p "$context_dir/rootfs$(dirname "$lib")"
    cp -L "$lib" "$context_dir/rootfs$lib"
  done
  cp "$nats_server" "$context_dir/rootfs/nats-server"
  chmod 0755 "$context_dir/rootfs/nats-server"
  log "staged $("$nats_server" --version) with $(echo "$libs" | tr '\n' ' ')"
else
  log "no nats-server at $nats_server (apt-get install nats-server, or NATS_SERVER=…): the image has none, and the compose cluster profile cannot run"
fi
printf 'root:x:0:0:root:/:/nonexistent\nbooblik:x:%s:%s:booblik:/data:/nonexistent\n' "$user_id" "$user_id" \
  >"$context_dir/rootfs/etc/passwd"
printf 'root:x:0:\nbooblik:x:%s:\n' "$user_id" >"$context_dir/rootfs/etc/group"
cp "$repo/Dockerfile" "$context_dir/Dockerfile"
log "binaries: $(xargs -n 1 basename <"$binaries_file" | tr '\n' ' ')"

log "docker build -t $image"
started=$SECONDS
# The legacy builder is all this engine has (no buildx); it needs nothing from a registry here.
DOCKER_BUILDKIT=0 docker build --quiet --tag "$image" "$context_dir" >/dev/null
# A rebuilt tag leaves the previous image dangling: drop ours (never someone else's).
docker image prune --force --filter 'label=org.opencontainers.image.title=booblik' >/dev/null
log "docker build done in $((SECONDS - started)) s"

# Smoke test: the broker binary starts inside the scratch image (proves it is really static).
docker run --rm "$image" /booblik-broker --version >&2
if [ -x "$nats_server" ]; then
  docker run --rm "$image" /nats-server --version >&2
fi
log "built $image"

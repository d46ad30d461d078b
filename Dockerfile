# The booblik image, built from binaries compiled on the host.
#
# Build it with `samples/compose/build-image.sh` (it builds the static binaries, stages the
# context and runs `docker build`); this file is copied into that staged context, so the paths
# below are relative to it, not to the repository:
#   rootfs/  every workspace binary at /, /etc/passwd and /etc/group, /tmp (mode 1777); and
#            /nats-server with /lib64/ld-linux-x86-64.so.2 and /lib/x86_64-linux-gnu/libc.so.6
#   state/   empty /data and /offsets, owned by the unprivileged user
#
# Why FROM scratch: the machine this project is built on has a Docker engine with no images and
# no registry, so there is no base image to start from. The binaries are statically linked
# glibc executables, which cannot resolve host names (glibc's NSS needs shared libraries a
# scratch image lacks): give containers IP addresses, never names. Health checks use the
# broker's own `health` subcommand, since there is no shell or curl in the image.
#
# The one binary that is not ours, `/nats-server` (the compose `cluster` profile's three NATS
# nodes), is Debian's package, which is dynamically linked: a static NATS build would have to
# come from a third party or be compiled here with a Go toolchain this machine lacks. It needs
# only libc.so.6 and the loader (`ldd /usr/sbin/nats-server`), so build-image.sh stages those two
# files at their own paths — the ELF interpreter /lib64/ld-linux-x86-64.so.2 and libc in the
# loader's built-in search path — and refuses a nats-server that links anything else. Whether it
# could resolve host names in a scratch image is not relied on: NATS nodes get fixed IPs too.
#
# For a machine with a registry, `Dockerfile.registry` builds the same image in a multi-stage
# build instead.
FROM scratch

LABEL org.opencontainers.image.title="booblik" \
      org.opencontainers.image.description="booblik broker, client tools, samples and load harness" \
      org.opencontainers.image.source="https://github.com/booblik/booblik-rs"

COPY rootfs/ /
# A named volume mounted on an empty image directory starts as a copy of it, owner included,
# so the unprivileged user can write its data and offsets there.
COPY --chown=10001:10001 state/ /

USER 10001:10001
WORKDIR /data

# 9092: the booblik protocol. 9464: Prometheus metrics (when --metrics-bind is given).
EXPOSE 9092 9464

# Every binary is at / (a scratch image has no PATH to search: use exec form, absolute paths).
# The default command runs the broker; compose files and `docker run` pick another binary.
CMD ["/booblik-broker", "--bind", "0.0.0.0:9092", "--data-dir", "/data", "--metrics-bind", "0.0.0.0:9464"]

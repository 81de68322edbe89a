# syntax=docker/dockerfile:1
# Herald in a container: built with the Swift image, run on Debian slim without Swift.
#
#   docker build -t herald .
#   docker run -d --name herald -p 8080:8080 -p 8443:8443 -v herald-data:/var/lib/herald herald
#
# Settings are HERALD_* environment variables (docker run -e / --env-file); secrets such as
# the APNs key are best mounted read-only as files (HERALD_APNS_KEY_FILE=/run/secrets/…).

# The builder's Debian release must match the runtime's (the binary uses its C library).
# For builds that must be repeatable, pin both by digest, as `docker buildx imagetools inspect
# swift:6.3-bookworm` prints it:
#   docker build --build-arg SWIFT_IMAGE=swift:6.3-bookworm@sha256:… \
#                --build-arg RUNTIME_IMAGE=debian:bookworm-slim@sha256:… -t herald .
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${SWIFT_IMAGE} AS build
WORKDIR /src
# The dependencies first, in a layer of their own that changes only with Package.swift.
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
# The Swift runtime and Foundation linked in: the image below needs no Swift. Foundation's
# networking and XML link libcurl and libxml2 (the Swift image has their -dev packages).
# Stripped: 99 MB instead of 207.
RUN swift build -c release --static-swift-stdlib --product herald \
 && install -D -s -m 0755 "$(swift build -c release --static-swift-stdlib --show-bin-path)/herald" /out/herald

FROM ${RUNTIME_IMAGE}
# libcurl4, libxml2: what the binary links beyond glibc and libstdc++ (`ldd`);
# ca-certificates: the push services' roots; tzdata: time zones; curl: the health check.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends libcurl4 libxml2 ca-certificates tzdata curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/herald --shell /usr/sbin/nologin herald \
 && install -d -o herald -g herald -m 0700 /var/lib/herald
COPY --from=build /out/herald /usr/local/bin/herald

# Every hub's SQLite store, keys and certificates (with PostgreSQL: keys and certificates).
VOLUME ["/var/lib/herald"]
WORKDIR /var/lib/herald
# No built-in emulators: a production container that lacks one platform's credentials must not
# send that platform's notifications to an emulator inside it (they count PnsNotConfigured, and
# /ready says so). To try Herald out with emulators: docker run -e HERALD_EMULATORS=auto …
ENV HERALD_DATA_DIR=/var/lib/herald \
    HERALD_HOST=0.0.0.0 \
    HERALD_PORT=8080 \
    HERALD_TLS_PORT=8443 \
    HERALD_EMULATORS=off
# HTTP (the APIs, /health, /ready, /metrics) and HTTPS (the same, and the console; the hub SDKs
# need it). The console is not served on plain HTTP off loopback.
EXPOSE 8080 8443
# The user made above, by number (a host or Kubernetes can check it is not root).
USER 10001:10001

# Liveness: /health answers while the process runs. Use /ready for a load balancer.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["/bin/sh", "-c", "curl -fsS \"http://127.0.0.1:${HERALD_PORT}/health\" > /dev/null || exit 1"]

# herald serve stops gracefully on SIGTERM (docker stop); give it the time to finish its pages:
# docker stop --time 60.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["serve"]

# fencegw container image.
#
#   docker build -t fencegw:local .
#   docker compose up            # postgres + etcd + migrations + gateway
#
# The runtime image is distroless (no shell, no package manager, uid 65532):
# it holds only the static binary and the demo policy/migrations.

# go.mod asks for go >= 1.26.8 and the golang images set GOTOOLCHAIN=local
# (no toolchain download during the build), so the 1.26 tag, which follows
# the newest 1.26.x patch release, must be at 1.26.8 or later. For a
# reproducible build, pin the patch: --build-arg GO_VERSION=1.26.8
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src

# A static binary: the distroless/static runtime has no libc.
ENV CGO_ENABLED=0

# Modules first, in their own layer: this layer is rebuilt only when
# go.mod or go.sum change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# The build context has no .git (.dockerignore), so the toolchain cannot
# record the revision: it comes in as an argument (docker-compose.yml
# passes FENCEGW_REVISION), e.g.
#   docker build --build-arg REVISION=$(git rev-parse HEAD) .
ARG REVISION
RUN go build -trimpath -ldflags="-s -w -X github.com/fencegw/fencegw/internal/buildinfo.revision=${REVISION}" -o /out/fencegw ./cmd/fencegw
# The folder of the key-encryption key, owned by the image's user: a
# volume mounted on it takes its owner (docker-compose.yml's token-kek).
RUN mkdir -p /out/var/kek && chmod 0700 /out/var/kek

FROM gcr.io/distroless/static-debian12:nonroot

COPY --from=build /out/fencegw /usr/local/bin/fencegw
COPY --from=build --chown=65532:65532 /out/var/ /var/lib/fencegw/
# The demo application: its policy for `fencegw serve --policy` and its
# migrations for `fencegw migrate --dir ... --table demo_schema_migrations up`.
COPY testdata/demo/policy.yaml /etc/fencegw/demo/policy.yaml
COPY testdata/demo/migrations/ /etc/fencegw/demo/migrations/

# The binary's default, 127.0.0.1:8080, is unreachable from outside a
# container. The --listen flag still overrides this.
ENV FENCEGW_LISTEN=0.0.0.0:8080

USER nonroot:nonroot
EXPOSE 8080

# The image has no shell or HTTP client: fencegw probes itself. For the
# default `serve` on 8080; orchestrators may probe GET /livez and
# GET /readyz over HTTP instead (or --ops-listen's port).
HEALTHCHECK --interval=10s --timeout=6s --start-period=10s CMD ["/usr/local/bin/fencegw", "health", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/usr/local/bin/fencegw"]
CMD ["serve"]

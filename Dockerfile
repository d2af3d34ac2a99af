# One image for the operator (espo manager), the trainer (espo trainer) and the CPU
# policy worker (espo worker --device cpu); the controller runs the trainer pods from it.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#                --build-arg COMMIT=$(git rev-parse --short HEAD) -t espo-operator:dev .
#
# The final stage is FROM scratch with exactly what a distroless "static" base holds
# for a static Go binary: CA certificates, /etc/passwd and /etc/group with the nonroot
# user (65532), its home and a writable /tmp. No shell, no package manager.
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src

# Modules first, in their own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

# The root filesystem of the final image, besides the binary.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /rootfs/home/nonroot \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /rootfs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /rootfs/etc/group \
 && chmod 1777 /rootfs/tmp \
 && chown 65532:65532 /rootfs/home/nonroot

COPY . .

# The same build as `make build TAGS=grpcnotrace,nolocal` (test/packaging checks that they
# agree), cross-compiled for the target platform. nolocal: the image's espo has no local
# mode ("espo local" runs etcd, kube-apiserver and pods on a machine, not in a pod); the
# manager then links about a third less code and peaks at about 12 MiB less memory.
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -tags grpcnotrace,nolocal -ldflags "-X main.version=${VERSION} -X main.commit=${COMMIT}" -o /rootfs/usr/local/bin/espo ./cmd/espo

FROM scratch
COPY --from=build /rootfs/ /
ENV PATH=/usr/local/bin \
    HOME=/home/nonroot \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /home/nonroot
# The controller's pods name their command ("espo trainer ...", "espo worker ..."), which
# PATH resolves; without one the image runs the operator.
ENTRYPOINT ["/usr/local/bin/espo"]
CMD ["manager"]

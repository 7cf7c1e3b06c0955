# The two commands the README promises; each does all its own set-up.
# check is the quick tier for iterating (no VM, no -race; see scripts/check).
.PHONY: test demo setup check release image

test:
	scripts/test

demo:
	scripts/demo

setup:
	scripts/setup

check:
	scripts/check

# The release of ipvskit-proxy (docs/deploy.md): release builds the static
# binary into bin/, image the container image from kube/Dockerfile; both
# stamp VERSION and REVISION into what --version prints.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE ?= ipvskit-proxy:$(VERSION)

release:
	cd kube && CGO_ENABLED=0 go build -trimpath -buildvcs=false \
		-ldflags="-s -X main.version=$(VERSION) -X main.revision=$(REVISION)" \
		-o ../bin/ipvskit-proxy ./cmd/ipvskit-proxy
	bin/ipvskit-proxy --version

# GO_IMAGE and RUN_IMAGE, if set, replace the Dockerfile's base images (the
# release pins them by digest: docs/deploy.md).
image:
	docker build -f kube/Dockerfile --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		$(if $(GO_IMAGE),--build-arg GO_IMAGE=$(GO_IMAGE)) $(if $(RUN_IMAGE),--build-arg RUN_IMAGE=$(RUN_IMAGE)) -t $(IMAGE) .

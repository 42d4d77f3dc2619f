# Multi-stage build of the binaries: docker build -t agentfleet .
# (.dockerignore keeps data/, .git and node_modules out of the context.)
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/orchestrator ./cmd/orchestrator \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/toolworker ./cmd/toolworker \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/agentctl ./cmd/agentctl \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/healthcheck ./cmd/healthcheck

FROM gcr.io/distroless/static-debian12:nonroot
# healthcheck: the image has no shell, curl or wget for a container
# healthcheck to run (docker-compose.yml).
COPY --from=build /out/orchestrator /out/toolworker /out/agentctl /out/healthcheck /usr/local/bin/
COPY deploy/agents.yaml /etc/agentfleet/agents.yaml
# The distroless nonroot user by number (65532), so that Kubernetes can
# check runAsNonRoot.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/orchestrator"]

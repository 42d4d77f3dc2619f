# Multi-stage build of both binaries: docker build -t agentfleet .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/orchestrator ./cmd/orchestrator \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/toolworker ./cmd/toolworker

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/orchestrator /out/toolworker /usr/local/bin/
COPY deploy/agents.yaml /etc/agentfleet/agents.yaml
USER nonroot
ENTRYPOINT ["/usr/local/bin/orchestrator"]

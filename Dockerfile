# Builds the schedq command. Not built in this repository's CI (no
# container engine there); the Go build inside it is.
FROM golang:1.26 AS build
WORKDIR /src
COPY . .
RUN cd kube && CGO_ENABLED=0 go build -trimpath -o /out/schedq ./cmd/schedq

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/schedq /schedq
ENTRYPOINT ["/schedq"]

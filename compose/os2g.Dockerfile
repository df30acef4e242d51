# os2g: the launcher, its jars and libfuse 3; the image of the compose demo and of the Kubernetes CSI
# driver (deploy/). Built from the repository root: docker build -f compose/os2g.Dockerfile -t os2g .
FROM maven:3.9-eclipse-temurin-25 AS build
WORKDIR /src
COPY pom.xml .
RUN mvn -B -q -ntp dependency:go-offline
COPY src src
# not offline: the build fetches protoc and its gRPC plugin for the CSI messages
RUN mvn -B -q -ntp package -DskipTests

FROM eclipse-temurin:25-jre
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends fuse3 util-linux \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/os2g.jar /opt/os2g/os2g.jar
COPY --from=build /src/target/lib /opt/os2g/lib
COPY os2g /opt/os2g/os2g
COPY compose/os2g-entrypoint.sh /opt/os2g/os2g-entrypoint.sh
RUN ln -s /opt/os2g/os2g /usr/local/bin/os2g
ENTRYPOINT ["/opt/os2g/os2g-entrypoint.sh"]

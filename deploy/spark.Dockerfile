# syntax=docker/dockerfile:1
# tidemark's Spark image: the standalone master and workers of the full stack.
# Build context: the repository root (see docker-compose.yml).
#
# Not apache/spark: its Python is the one of its Ubuntu base, and PySpark refuses to run a
# Python worker whose minor version differs from the driver's (3.11, from the Airflow image).
# pyspark from PyPI ships the whole Spark distribution (jars, bin/spark-class), so this image
# is python:3.11 + a JRE + tidemark installed exactly as on the driver.

ARG PYTHON_VERSION=3.11

FROM maven:3.9-eclipse-temurin-17 AS jars
WORKDIR /src
COPY deploy/s3a/pom.xml deploy/s3a/pom.xml
COPY connectors/jvm connectors/jvm
RUN for group in delta kafka spark-kafka; do \
        mvn -q -B -f connectors/jvm/pom.xml -P "$group" dependency:copy-dependencies -Dtidemark.jars=/out/jars \
        || exit 1; \
    done \
 && mvn -q -B -f connectors/jvm/log-stores/pom.xml package -Dtidemark.build=/tmp/log-stores \
 && cp /tmp/log-stores/tidemark-log-stores.jar /out/jars/delta/ \
 && mvn -q -B -f deploy/s3a/pom.xml dependency:copy-dependencies -DoutputDirectory=/out/s3a

FROM python:${PYTHON_VERSION}-slim-bookworm

# The JRE's postinst links its man pages; slim images drop /usr/share/man, so recreate it.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/opt/java

# uid 185 and group 0, as in the apache/spark images, so volumes prepared for those fit.
RUN useradd --uid 185 --gid 0 --home-dir /opt/spark --create-home spark

COPY --chown=spark:0 . /opt/tidemark
COPY --from=jars --chown=spark:0 /out/jars /opt/tidemark/jars
# Executors run tidemark's readers and need its Python dependencies (pandas, pyarrow,
# confluent-kafka, delta-spark) at the versions the driver has; installing the project pins
# them, and pyspark==4.2.0 with them. The code itself comes with each job: the operator ships
# tidemark's packages (--py-files), which go ahead of this installed copy.
RUN pip install --no-cache-dir /opt/tidemark
RUN --mount=type=bind,from=jars,source=/out/s3a,target=/tmp/s3a \
    SPARK_HOME="$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" \
 && cp /tmp/s3a/*.jar "$SPARK_HOME/jars/" \
 && ln -s "$SPARK_HOME" /opt/spark/home \
 && mkdir -p /opt/spark/work /opt/tidemark/state \
 && chown -R spark:0 /opt/spark /opt/tidemark/state

ENV SPARK_HOME=/opt/spark/home \
    SPARK_CONF_DIR=/opt/tidemark/deploy/spark-conf \
    SPARK_WORKER_DIR=/opt/spark/work
ENV PATH="${SPARK_HOME}/bin:${PATH}"

USER spark
WORKDIR /opt/spark
